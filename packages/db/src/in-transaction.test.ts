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

describe("inTransaction with an opening statement (the shard fence, sent with BEGIN)", () => {
  it("hands fn the opening's result, holds its lock until COMMIT, and quotes any holder ID safely", async () => {
    const { sql } = await import("./index.js");
    // A holder ID with a quote and a backslash: quoted as a literal, never run as SQL.
    const holder = "sched'uler\\1; DROP TABLE jobs; --";
    await pool.query(`INSERT INTO shard_leases (shard, holder, epoch, expires_at) VALUES (7, $1, 42, now() + interval '1 minute')
                      ON CONFLICT (shard) DO UPDATE SET holder = EXCLUDED.holder, epoch = EXCLUDED.epoch, expires_at = EXCLUDED.expires_at`, [holder]);
    const held = await inTransaction(pool, async (_client, opened) => opened?.rowCount ?? 0, sql.shardFenceStatement(7, holder, "42"));
    expect(held).toBe(1);
    expect(await inTransaction(pool, async (_c, opened) => opened?.rowCount ?? 0, sql.shardFenceStatement(7, holder, "41"))).toBe(0);
    expect(await inTransaction(pool, async (_c, opened) => opened?.rowCount ?? 0, sql.shardFenceStatement(7, "someone-else", "42"))).toBe(0);
    expect((await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM jobs")).rows[0]!.n).toBe(0);
    // FOR SHARE: a takeover's UPDATE of the lease row waits for the fenced transaction to end.
    let released = false;
    const fenced = inTransaction(
      pool,
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        released = true;
      },
      sql.shardFenceStatement(7, holder, "42"),
    );
    await new Promise((r) => setTimeout(r, 50));
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      await admin.query("UPDATE shard_leases SET holder = 'taker', epoch = 43 WHERE shard = 7");
      expect(released).toBe(true);
    } finally {
      await admin.end();
    }
    await fenced;
    expect(() => sql.shardFenceStatement(7, holder, "42 OR true")).toThrow(/bad shard lease/);
  });
});
