import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPool } from "../client.js";
import { MIGRATIONS_DIR } from "../migrate.js";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase, type TestTenant } from "../testing.js";
import { compactLiveJobCounts, countPendingJobs, insertJobs } from "./jobs.js";

// The pending-job quota reads a tenant's live jobs as the sum of its rows in tenant_live_job_counts, which
// statement triggers on jobs append to. These tests hold that sum equal to a count of the tenant's live jobs
// after every kind of write to jobs, folds included, and under concurrent writers and folds.
let db: TestDatabase;
let pool: pg.Pool;
let a: TestTenant;
let b: TestTenant;

beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 8 });
  a = await createTestTenant(pool, { shard: 2 });
  b = await createTestTenant(pool, { shard: 5 });
});
// Each test starts with no jobs (and so, by the truncate trigger, no counts).
beforeEach(async () => {
  await pool.query(`TRUNCATE jobs CASCADE`);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

const insert = (t: TestTenant, n: number) =>
  insertJobs(pool, t, Array.from({ length: n }, () => newTestJob(t.queueId)), 60_000).then((rows) => rows.map((r) => r.id));

/** A count of the tenant's live jobs, read from the jobs themselves. */
const liveJobs = async (t: TestTenant): Promise<number> =>
  (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND status IN ('scheduled', 'dispatched', 'running')`, [t.id])).rows[0]!.n;

const pending = async (t: TestTenant): Promise<number> => (await countPendingJobs(pool, t)).pending;

const countRows = async (t: TestTenant): Promise<number> =>
  (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tenant_live_job_counts WHERE tenant_id = $1`, [t.id])).rows[0]!.n;

const expectExact = async () => {
  for (const t of [a, b]) expect(await pending(t)).toBe(await liveJobs(t));
};

const setStatus = (ids: string[], status: string) =>
  pool.query(`UPDATE jobs SET status = $2::job_status, updated_at = now() WHERE id = ANY($1::uuid[])`, [ids, status]);

describe("the live-job counts behind the pending-job quota", () => {
  it("follow creates, every move in and out of scheduled, dispatched and running, deletes and truncation", async () => {
    const ids = await insert(a, 12);
    const idsB = await insert(b, 5);
    expect(await pending(a)).toBe(12);
    expect(await pending(b)).toBe(5);

    // Moves between live states change nothing; finishes subtract; one statement across both tenants.
    await setStatus(ids.slice(0, 6), "dispatched");
    await setStatus(ids.slice(0, 3), "running");
    await expectExact();
    await setStatus([...ids.slice(0, 2), idsB[0]!], "succeeded");
    await setStatus([ids[2]!, ids[3]!], "dead");
    await setStatus([ids[4]!], "cancelled");
    await setStatus([ids[5]!, idsB[1]!], "expired");
    expect(await pending(a)).toBe(6);
    expect(await pending(b)).toBe(3);
    // A replay puts a dead job back; a statement that both finishes and revives nets out.
    await setStatus([ids[2]!], "scheduled");
    await pool.query(
      `UPDATE jobs SET status = CASE WHEN id = $1 THEN 'scheduled'::job_status ELSE 'succeeded'::job_status END WHERE id = ANY($2::uuid[])`,
      [ids[3], [ids[3], ids[6]]],
    );
    await expectExact();
    expect(await pending(a)).toBe(7);

    // Deleting live and finished jobs (a move to history deletes only finished ones).
    await pool.query(`DELETE FROM jobs WHERE id = ANY($1::uuid[])`, [[ids[0], ids[7], ids[8]]]);
    await expectExact();
    expect(await pending(a)).toBe(5);

    await pool.query(`TRUNCATE jobs CASCADE`);
    expect(await pending(a)).toBe(0);
    expect((await pool.query(`SELECT 1 FROM tenant_live_job_counts`)).rowCount).toBe(0);
  });

  it("fold to one row per tenant with the same sum, and to none when the sum is 0", async () => {
    const ids = await insert(a, 4);
    await insert(a, 3);
    await insert(b, 2);
    await setStatus(ids.slice(0, 1), "succeeded");
    const idsB = await insert(b, 1);
    await setStatus(idsB, "succeeded");
    expect(await countRows(a)).toBe(3);
    // Only the shards named are folded.
    expect(await compactLiveJobCounts(pool, [a.shard], 1_000)).toBe(3);
    expect(await countRows(a)).toBe(1);
    expect(await countRows(b)).toBe(3);
    expect(await pending(a)).toBe(6);
    expect(await compactLiveJobCounts(pool, [a.shard, b.shard], 1_000)).toBe(3);
    expect(await countRows(b)).toBe(1);
    await expectExact();
    // One tenant of a shard alone.
    const c = await createTestTenant(pool, { shard: b.shard });
    await insert(c, 1);
    await insert(c, 1);
    await insert(b, 1);
    expect(await compactLiveJobCounts(pool, [b.shard], 1_000, c.id)).toBe(2);
    expect(await countRows(c)).toBe(1);
    expect(await countRows(b)).toBe(2);
    expect(await compactLiveJobCounts(pool, [b.shard], 1_000)).toBe(2);
    // Nothing to fold: nothing deleted.
    expect(await compactLiveJobCounts(pool, [a.shard, b.shard], 1_000)).toBe(0);

    await pool.query(`UPDATE jobs SET status = 'succeeded' WHERE tenant_id = $1`, [b.id]);
    await compactLiveJobCounts(pool, [b.shard], 1_000);
    expect(await countRows(b)).toBe(0);
    expect(await pending(b)).toBe(0);
  });

  it("stay exact under concurrent creates, finishes and folds", async () => {
    const writer = async (t: TestTenant, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const ids = await insert(t, 1 + (i % 7));
        // Finish some in their own transaction, some together with a create of the other tenant's.
        if (i % 3 === 0) await setStatus(ids.slice(0, 2), "succeeded");
        else {
          const client = await pool.connect();
          try {
            await client.query("BEGIN");
            await client.query(`UPDATE jobs SET status = 'dead' WHERE id = $1`, [ids[0]]);
            await insertJobs(client, t === a ? b : a, [newTestJob((t === a ? b : a).queueId)], 60_000);
            await client.query(i % 5 === 0 ? "ROLLBACK" : "COMMIT");
          } finally {
            client.release();
          }
        }
      }
    };
    let running = true;
    const folder = async (shards: number[], tenantId: string | null) => {
      while (running) await compactLiveJobCounts(pool, shards, 1_000, tenantId);
    };
    // Meanwhile the sum and the live jobs, read in one statement (one snapshot), must agree at every moment.
    const disagreements: string[] = [];
    const watcher = async () => {
      while (running) {
        const { rows } = await pool.query<{ tenant: string; counted: number; live: number }>(
          `SELECT t.id AS tenant,
                  (SELECT coalesce(sum(n), 0)::int FROM tenant_live_job_counts c WHERE c.shard = t.shard AND c.tenant_id = t.id) AS counted,
                  (SELECT count(*)::int FROM jobs j WHERE j.tenant_id = t.id AND j.status IN ('scheduled', 'dispatched', 'running')) AS live
             FROM tenants t WHERE t.id = ANY($1::uuid[])`,
          [[a.id, b.id]],
        );
        for (const r of rows) if (r.counted !== r.live) disagreements.push(`${r.tenant}: ${r.counted} counted, ${r.live} live`);
      }
    };
    // Two jobs finished and cancelled at once, over and over: a job's two racing updates must count once.
    const racer = async () => {
      for (let i = 0; i < 40; i++) {
        const [id] = await insert(b, 1);
        await Promise.all([setStatus([id!], "succeeded"), setStatus([id!], "cancelled"), setStatus([id!], "running")]);
      }
    };
    const background = [folder([a.shard, b.shard], null), folder([b.shard, a.shard], null), folder([a.shard], a.id), watcher()];
    await Promise.all([writer(a, 60), writer(b, 60), writer(a, 60), racer()]);
    running = false;
    await Promise.all(background);
    expect(disagreements).toEqual([]);
    await expectExact();
    await compactLiveJobCounts(pool, [a.shard, b.shard], 1_000);
    expect(await countRows(a)).toBe(1);
    await expectExact();
  });

  it("follow a tenant's deletion to 0", async () => {
    const c = await createTestTenant(pool, { shard: 2 });
    await insert(c, 3);
    await pool.query(`DELETE FROM tenants WHERE id = $1`, [c.id]);
    expect((await pool.query<{ n: number }>(`SELECT coalesce(sum(n), 0)::int AS n FROM tenant_live_job_counts WHERE tenant_id = $1`, [c.id])).rows[0]!.n).toBe(0);
    await compactLiveJobCounts(pool, [c.shard], 1_000);
    expect((await pool.query(`SELECT 1 FROM tenant_live_job_counts WHERE tenant_id = $1`, [c.id])).rowCount).toBe(0);
  });

  it("are counted by the migration from the live jobs a database already holds", async () => {
    const ids = await insert(a, 5);
    await insert(b, 3);
    await setStatus(ids.slice(0, 2), "succeeded");
    // Back to the schema before the counts, with the jobs in place; then the migrations as Prisma runs them (each
    // file one multi-statement query: one implicit transaction).
    await pool.query(`DROP TRIGGER jobs_live_count_insert ON jobs; DROP TRIGGER jobs_live_count_update ON jobs;
      DROP TRIGGER jobs_live_count_delete ON jobs; DROP TRIGGER jobs_live_count_truncate ON jobs;
      DROP FUNCTION jobs_live_count_insert(); DROP FUNCTION jobs_live_count_update(); DROP FUNCTION jobs_live_count_delete();
      DROP FUNCTION jobs_live_count_truncate(); DROP TABLE tenant_live_job_counts`);
    await insert(a, 4);
    for (const name of ["20261214010000_tenant_live_job_counts", "20261214020000_live_job_counts_truncate_lock"]) {
      await pool.query(fs.readFileSync(path.join(MIGRATIONS_DIR, name, "migration.sql"), "utf8"));
    }
    expect(await pending(a)).toBe(7);
    expect(await pending(b)).toBe(3);
    await insert(a, 1);
    await expectExact();
  });
});
