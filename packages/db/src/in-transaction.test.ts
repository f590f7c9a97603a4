import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createPool } from "./client.js";
import { inTransaction } from "./in-transaction.js";
import { createTestDatabase, testServerUrl, type TestDatabase } from "./testing.js";

let db: TestDatabase;
let pool: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe("inTransaction", () => {
  it("survives the connection dying mid-transaction (a terminated backend): the call rejects, the process does not crash, the pool recovers", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await expect(
        inTransaction(pool, async (client) => {
          const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
          await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
          // Idle in the transaction while the backend goes: pg emits 'error' on this client now.
          await new Promise((r) => setTimeout(r, 300));
          await client.query("SELECT 1");
        }),
      ).rejects.toThrow();
    } finally {
      await admin.end();
    }
    const { rows } = await pool.query<{ x: number }>("SELECT 1 AS x");
    expect(rows[0]!.x).toBe(1);
  });
});
