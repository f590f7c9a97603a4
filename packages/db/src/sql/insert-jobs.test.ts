import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPool } from "../client.js";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase } from "../testing.js";
import { insertJobs, type JobRow, type NewJob } from "./jobs.js";

// insertJobs reads back only what the database decides and composes the rest of each row from its input.
// These tests hold every composed row equal to the row Postgres stored, column for column, so a new
// column, a changed default or a trigger cannot make the API answer with something other than what it kept.
let db: TestDatabase;
let pool: pg.Pool;
const tenant = { id: randomUUID(), shard: 3 };
const queueId = randomUUID();

beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 2 });
  await createTestTenant(pool, { ...tenant, queueId, weight: 1, admissionRate: 100, admissionBurst: 100, maxPendingJobs: 1000, maxInFlight: 100 });
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** This file's jobs: the shared fixture with a 10 s timeout, on this test's queue. */
const job = (over: Partial<NewJob> = {}): NewJob => newTestJob(queueId, { timeout_ms: 10_000, ...over });

const stored = async (ids: string[]): Promise<Map<string, JobRow>> => {
  const { rows } = await pool.query<JobRow>(`SELECT * FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
  return new Map(rows.map((r) => [r.id, r]));
};

describe("insertJobs", () => {
  it("returns each inserted row exactly as stored, whatever the job sets", async () => {
    const jobs = [
      job(),
      job({ run_at: "2031-03-04T05:06:07.891Z", expires_at: "2031-03-05T00:00:00.5+02:00", priority: 7 }),
      job({ delay_ms: 90_000, idempotency_key: `key-${randomUUID()}`, request_hash: "h1", body: '{"a":1}', headers: { "x-b": "2", "x-a": "1" } }),
      job({ method: "PUT", timeout_ms: 1_234, max_attempts: 9, backoff: { strategy: "fixed", baseMs: 5, maxMs: 5, jitter: "none" } }),
      job({ dependency_key: "payments", callback_url: "https://example.com/cb", metadata: { z: [1, 2.5, "x"], a: { nested: true, n: null } } }),
      job({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "vendor=value" }),
    ];
    const inserted = await insertJobs(pool, tenant, jobs, 3_600_000);
    expect(inserted.map((r) => r.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    const rows = await stored(jobs.map((j) => j.id));
    for (const row of inserted) expect(row).toEqual(rows.get(row.id));
    // The column default started a trace for the jobs that brought none; the caller's is kept.
    expect(inserted.find((r) => r.id === jobs[0]!.id)!.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(inserted.find((r) => r.id === jobs[5]!.id)).toMatchObject({ traceparent: jobs[5]!.traceparent, tracestate: "vendor=value" });
  });

  it("skips a job whose idempotency key the tenant already holds, and returns only what it inserted", async () => {
    const key = `key-${randomUUID()}`;
    const [first] = await insertJobs(pool, tenant, [job({ idempotency_key: key, request_hash: "h" })], 60_000);
    const again = job({ idempotency_key: key, request_hash: "h" });
    const other = job({ idempotency_key: `key-${randomUUID()}`, request_hash: "h" });
    const inserted = await insertJobs(pool, tenant, [again, other], 60_000);
    expect(inserted.map((r) => r.id)).toEqual([other.id]);
    const rows = await stored([first!.id, other.id]);
    expect(first).toEqual(rows.get(first!.id));
    expect(inserted[0]).toEqual(rows.get(other.id));
    expect((await stored([again.id])).size).toBe(0);
  });

  it("refuses a job on another tenant's queue, and deleting a tenant deletes its jobs", async () => {
    const other = { id: randomUUID(), shard: 3 };
    const otherQueue = randomUUID();
    await createTestTenant(pool, { ...other, queueId: otherQueue, weight: 1, admissionRate: 100, admissionBurst: 100, maxPendingJobs: 1000, maxInFlight: 100 });
    await expect(insertJobs(pool, tenant, [job({ queue_id: otherQueue })], 60_000)).rejects.toMatchObject({ code: "23503", constraint: "jobs_tenant_id_queue_id_fkey" });
    const [own] = await insertJobs(pool, other, [newTestJob(otherQueue)], 60_000);
    await pool.query(`DELETE FROM tenants WHERE id = $1`, [other.id]);
    expect((await stored([own!.id])).size).toBe(0);
  });
});
