#!/usr/bin/env node
// `npm run tick -- <command>`: administration of a Tick deployment from the repository.
//
//   npm run tick -- operator add <email>      make an existing account a platform operator
//   npm run tick -- operator remove <email>   take the role away
//   npm run tick -- operator list             who holds it
//
// Platform operators (the people running the SaaS, not a tenant role) list tenants, set their limits and
// suspend or resume them, in the console's Operator page and API. The database is DATABASE_URL, or the one
// `npm start` uses (the local server, or the one it started under .data). Every change is printed.
import { DEFAULT_DATABASE_URL, loadPg, postgresAnswers, redact } from "./lib/services.mjs";

const LOCAL_DATABASE_URL = "postgresql://postgres@127.0.0.1:54329/tick";
const usage = `usage: npm run tick -- operator add|remove <email>
       npm run tick -- operator list`;

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
  const [area, action, email] = process.argv.slice(2);
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

main().catch((err) => fail(`tick: ${err.message}`));
