import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPool } from "../client.js";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase, type TestTenant } from "../testing.js";
import { countJobsByStatus, insertJobs, listJobs, type JobRow } from "./jobs.js";
import { ensureHistoryPartitions, JOB_COLUMNS } from "./lifecycle.js";

// The hot table's listing index leaves out jobs in flight, so the list reads three places (that index, the
// tenant's jobs in flight, history) and merges them. These tests hold the merged pages equal to one ordered read
// of every job of the tenant, whatever its status and wherever it is.
let db: TestDatabase;
let pool: pg.Pool;
let a: TestTenant;
let b: TestTenant;
const STATUSES = ["scheduled", "dispatched", "running", "succeeded", "dead", "cancelled", "expired", "rate_limited"] as const;

beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 4 });
  a = await createTestTenant(pool, { shard: 3 });
  b = await createTestTenant(pool, { shard: 3 });
  await ensureHistoryPartitions(pool, 2, 2);
  for (const t of [a, b]) {
    // 80 jobs a tenant, created a second apart (some in the same millisecond, so the id breaks ties), every status
    // ten times; a quarter of the finished ones moved to history.
    const ids = (await insertJobs(pool, t, Array.from({ length: 80 }, () => newTestJob(t.queueId)), 60_000)).map((r) => r.id);
    await pool.query(
      `UPDATE jobs j SET created_at = now() - make_interval(secs => (u.n / 2)::int), status = ($3::text[])[1 + u.n % 8]::job_status,
              finished_at = CASE WHEN u.n % 8 >= 3 THEN now() END
         FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n) WHERE j.id = u.id AND j.tenant_id = $2`,
      [ids, t.id, STATUSES],
    );
    await pool.query(
      `WITH moved AS (DELETE FROM jobs WHERE tenant_id = $1 AND finished_at IS NOT NULL AND id::text < '4' RETURNING *)
       INSERT INTO history.jobs (${JOB_COLUMNS}) SELECT ${JOB_COLUMNS} FROM moved`,
      [t.id],
    );
  }
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** Every job of the tenant, live or in history, newest first: what the list must return. */
const everyJob = async (t: TestTenant, statuses?: string[]) =>
  (
    await pool.query<{ id: string; status: string }>(
      `SELECT id, status FROM history.jobs_all WHERE tenant_id = $1 AND ($2::job_status[] IS NULL OR status = ANY($2::job_status[]))
        ORDER BY created_at DESC, id DESC`,
      [t.id, statuses ?? null],
    )
  ).rows;

/** Every page of the list, `limit` at a time, following the keyset cursor. */
async function allPages(t: TestTenant, limit: number, statuses?: string[]): Promise<JobRow[]> {
  const out: JobRow[] = [];
  let before: { at: string; id: string } | undefined;
  for (;;) {
    const page = await listJobs(pool, t.id, { limit, before, statuses });
    out.push(...page);
    if (page.length < limit) return out;
    const last = page.at(-1)!;
    before = { at: last.created_at.toISOString(), id: last.id };
  }
}

describe("listJobs", () => {
  it("pages through every job of the tenant in order: listed, in flight and in history alike", async () => {
    const expected = await everyJob(a);
    expect(expected).toHaveLength(80);
    expect(new Set(expected.map((j) => j.status))).toEqual(new Set(STATUSES));
    expect((await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM history.jobs WHERE tenant_id = $1`, [a.id])).rows[0]!.n).toBeGreaterThan(0);
    for (const limit of [7, 80, 200]) {
      const got = await allPages(a, limit);
      expect(got.map((j) => [j.id, j.status])).toEqual(expected.map((j) => [j.id, j.status]));
      expect(got.every((j) => j.tenant_id === a.id && j.queue_name === "default")).toBe(true);
    }
  });

  it("filters by status, in flight or not, and by queue", async () => {
    for (const statuses of [["running"], ["dispatched", "scheduled"], ["succeeded", "dead"]]) {
      expect((await allPages(a, 3, statuses)).map((j) => j.id)).toEqual((await everyJob(a, statuses)).map((j) => j.id));
    }
    expect(await listJobs(pool, a.id, { limit: 10, queue: "no-such-queue" })).toEqual([]);
    expect(await listJobs(pool, a.id, { limit: 100, queue: "default" })).toHaveLength(80);
  });

  it("counts the tenant's jobs by status, those in flight included", async () => {
    const counts = Object.fromEntries((await countJobsByStatus(pool, b.id, 24)).map((r) => [r.status, r.n]));
    // Every job of the hot table (the DLQ's dead ones included) and history's finished ones but its dead.
    const live = (
      await pool.query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM history.jobs_all WHERE tenant_id = $1 AND (status <> 'dead' OR id IN (SELECT id FROM jobs)) GROUP BY status`,
        [b.id],
      )
    ).rows;
    expect(counts).toEqual(Object.fromEntries(live.map((r) => [r.status, r.n])));
    expect(counts.running).toBe(10);
    expect(counts.dispatched).toBe(10);
  });
});
