import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testServerUrl } from "../packages/db/dist/testing.js";

const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), "tick.mjs");

// One database for the file; this connection stays open throughout (the restore fence sees it as an app's).
let db;
let pg;
const run = (...args) => spawnSync(process.execPath, [cli, ...args], { env: { ...process.env, DATABASE_URL: db.url }, encoding: "utf8" });
beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  const { default: pgModule } = await import("pg");
  pg = new pgModule.Client({ connectionString: db.url, application_name: "tick-worker" });
  await pg.connect();
}, 120_000);
afterAll(async () => {
  await pg?.end();
  await db?.drop();
});

describe("npm run tick -- operator", () => {
  beforeAll(async () => {
    await pg.query("INSERT INTO users (id, email, updated_at) VALUES (gen_random_uuid(), 'ops@example.test', now())");
  });

  const isOperator = async () => (await pg.query("SELECT platform_operator FROM users WHERE email = 'ops@example.test'")).rows[0].platform_operator;

  it("adds, lists and removes a platform operator, by email in any case", async () => {
    const added = run("operator", "add", "Ops@Example.test");
    expect(added.status).toBe(0);
    expect(added.stdout).toContain("ops@example.test is now a platform operator");
    expect(await isOperator()).toBe(true);
    expect(run("operator", "list").stdout.trim()).toBe("ops@example.test");
    expect(run("operator", "remove", "ops@example.test").status).toBe(0);
    expect(await isOperator()).toBe(false);
  });

  it("refuses an email with no account, and bad usage, with a message and a non-zero exit", () => {
    const unknown = run("operator", "add", "nobody@example.test");
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("no account with the email nobody@example.test");
    const usage = run("operator", "promote");
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("usage: npm run tick -- operator add|remove <email>");
  });
});

describe("npm run tick -- restore fence", () => {
  beforeAll(async () => {
    // Leases as a restored database holds them: dated before its server started.
    await pg.query("INSERT INTO shard_leases (shard, epoch, acquired_at, renewed_at, expires_at) SELECT s, 3, t, t, t FROM generate_series(0, 1) s, (SELECT pg_postmaster_start_time() - interval '1 minute' AS t) x");
  });

  it("refuses while another session is connected, changing nothing; with --force fences and prints what it did", async () => {
    const refused = run("restore", "fence");
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("restore fence refused");
    expect(refused.stderr).toContain("1 other session(s) connected (tick-worker");
    expect((await pg.query("SELECT count(*)::int AS n FROM restore_fences")).rows[0].n).toBe(0);

    const forced = run("restore", "fence", "--force");
    expect(forced.status).toBe(0);
    const floor = (await pg.query("SELECT token_floor::text AS f FROM restore_fences")).rows[0].f;
    expect(forced.stdout).toContain(`fencing tokens, shard epochs and audit log ids issued from now on are at least ${floor}`);
    expect(forced.stdout).toContain(`2 shard leases released, epochs advanced (shard 0: 3 → ${floor}, 1: 3 → ${floor})`);
    expect(forced.stdout).toContain("overridden with --force: 1 other session(s) connected");
    expect((await pg.query("SELECT DISTINCT epoch::text AS e FROM shard_leases")).rows).toEqual([{ e: floor }]);
    expect(run("restore", "fence", "--now").status).toBe(2);
  });
});
