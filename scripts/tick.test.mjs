import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testServerUrl } from "../packages/db/dist/testing.js";

const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), "tick.mjs");

describe("npm run tick -- operator", () => {
  let db;
  let pg;
  const run = (...args) => spawnSync(process.execPath, [cli, ...args], { env: { ...process.env, DATABASE_URL: db.url }, encoding: "utf8" });
  beforeAll(async () => {
    db = await createTestDatabase(testServerUrl());
    const { default: pgModule } = await import("pg");
    pg = new pgModule.Client({ connectionString: db.url });
    await pg.connect();
    await pg.query("INSERT INTO users (id, email, updated_at) VALUES (gen_random_uuid(), 'ops@example.test', now())");
  }, 120_000);
  afterAll(async () => {
    await pg?.end();
    await db?.drop();
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
