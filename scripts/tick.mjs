#!/usr/bin/env node
// `npm run tick -- <command>`: administration of a Tick deployment from the repository.
//
//   npm run tick -- operator add <email>      make an existing account a platform operator
//   npm run tick -- operator remove <email>   take the role away
//   npm run tick -- operator list             who holds it
//   npm run tick -- restore fence [--force]   after restoring the database from a backup, before the apps start
//
// Platform operators (the people running the SaaS, not a tenant role) list tenants, set their limits and
// suspend or resume them, in the console's Operator page and API. The restore fence makes a database restored
// to an earlier point hand out fencing tokens and shard epochs above any it issued before
// (docs/operations.md, "Backup and restore"); it refuses while anything is connected to the database, unless
// --force. The database is DATABASE_URL, or the one `npm start` uses (the local server, or the one it started
// under .data). Every change is printed.
import { DEFAULT_DATABASE_URL, loadPg, postgresAnswers, redact } from "./lib/services.mjs";

const LOCAL_DATABASE_URL = "postgresql://postgres@127.0.0.1:54329/tick";
const usage = `usage: npm run tick -- operator add|remove <email>
       npm run tick -- operator list
       npm run tick -- restore fence [--force]`;

function fail(message, code = 1) {
  console.error(message);
  process.exit(code);
}

async function databaseUrl() {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  for (const url of [DEFAULT_DATABASE_URL, LOCAL_DATABASE_URL]) if (await postgresAnswers(url, 2000).catch(() => false)) return url;
  fail(`no database answers at ${redact(DEFAULT_DATABASE_URL)} or ${redact(LOCAL_DATABASE_URL)}: set DATABASE_URL, or run npm start first`);
}

async function main() {
  const [area, action, ...rest] = process.argv.slice(2);
  if (area === "restore" && action === "fence" && rest.every((a) => a === "--force")) return restoreFence(rest.includes("--force"));
  const [email] = rest;
  if (area !== "operator" || !["add", "remove", "list"].includes(action ?? "")) fail(usage, 2);
  if (action !== "list" && !email) fail(usage, 2);
  const url = await databaseUrl();
  const client = new (loadPg().Client)({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    if (action === "list") {
      const { rows } = await client.query("SELECT email FROM users WHERE platform_operator ORDER BY email");
      console.log(rows.length ? rows.map((r) => r.email).join("\n") : "no platform operators (TICK_OPERATOR_EMAILS may name some)");
      return;
    }
    const { rows } = await client.query("UPDATE users SET platform_operator = $2, updated_at = now() WHERE email = lower($1) RETURNING email", [email.trim(), action === "add"]);
    if (rows.length === 0) fail(`no account with the email ${email}: sign up or accept an invitation first`);
    console.log(action === "add" ? `${rows[0].email} is now a platform operator (${redact(url)})` : `${rows[0].email} is no longer a platform operator (${redact(url)})`);
  } finally {
    await client.end();
  }
}

/** The restore fence (packages/db/src/sql/restore-fence.ts), on one connection, and what it did. */
async function restoreFence(force) {
  const { fenceRestoredDatabase, RestoreFenceRefused } = await import("@tick/db/restore-fence").catch((err) =>
    fail(`tick: the built @tick/db is missing (${err.message}): run npm run build first`),
  );
  const url = await databaseUrl();
  const pool = new (loadPg().Pool)({ connectionString: url, max: 1, application_name: "tick-restore-fence", connectionTimeoutMillis: 5000 });
  try {
    const fence = await fenceRestoredDatabase(pool, { force });
    const shown = fence.shards.slice(0, 4).map((s) => `${s.shard}: ${s.from} → ${s.to}`);
    console.log(
      [
        `fenced ${redact(url)} (restore fence ${fence.id}, database clock ${fence.fencedAt.toISOString()}):`,
        `  fencing tokens, shard epochs and audit log ids issued from now on are at least ${fence.tokenFloor}` +
          ` (newest instant in the restored data: ${fence.newestDataAt ? fence.newestDataAt.toISOString() : "none"})`,
        fence.shards.length
          ? `  ${fence.shards.length} shard leases released, epochs advanced (shard ${shown.join(", ")}${fence.shards.length > shown.length ? ", ..." : ""})`
          : "  no shard leases yet (a scheduler makes them at its start, at the floor)",
        `  ${fence.attemptsInFlight} attempts dispatched or running at the restore point: tokens advanced, leases ended (the reaper retries them)`,
        ...(fence.overridden.length ? [`  overridden with --force: ${fence.overridden.join("; ")}`] : []),
        "next: empty Tick's Redis (its broker and due index are rebuilt from Postgres), then start the apps",
      ].join("\n"),
    );
  } catch (err) {
    if (!(err instanceof RestoreFenceRefused)) throw err;
    fail(
      `tick: restore fence refused (${redact(url)}), nothing changed:\n${err.reasons.map((r) => `  - ${r}`).join("\n")}` +
        (err.overridable ? "\nstop every app using this database first, or pass --force if you know they are gone" : ""),
    );
  } finally {
    await pool.end();
  }
}

main().catch((err) => fail(`tick: ${err.message}`));
