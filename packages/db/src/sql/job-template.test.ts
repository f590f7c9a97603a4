import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPool } from "../client.js";
import { createTestDatabase, createTestTenant, testServerUrl, type TestDatabase, type TestTenant } from "../testing.js";
import { jobColumnsFromTemplate, type JobTemplate } from "./job-template.js";
import { findQueuesByName, insertJobs } from "./jobs.js";
import { insertOccurrenceJobs } from "./schedules.js";

// An API create composes a job's row in TypeScript, a schedule's occurrences compose theirs in SQL from the
// stored template. Both follow job-template.ts; these tests hold the stored rows equal, column for column, for
// the same template, apart from what is each path's own (timing, identity, trace).
let db: TestDatabase;
let pool: pg.Pool;
let tenant: TestTenant;

/** Columns each path sets its own way; every other column of the two rows must be equal. */
const OWN = ["id", "version", "due_at", "expires_at", "idempotency_key", "request_hash", "idempotency_expires_at", "schedule_id", "occurrence_at", "traceparent", "tracestate", "created_at", "updated_at"];

beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 2 });
  tenant = await createTestTenant(pool);
  // Queue defaults unlike the column defaults, so a fallback taken from the wrong place shows.
  await pool.query(
    `UPDATE queues SET default_timeout_ms = 4321, default_max_attempts = 7, default_backoff = '{"strategy":"fixed","baseMs":250,"maxMs":250,"jitter":"none"}' WHERE id = $1`,
    [tenant.queueId],
  );
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** The job an API create makes of the template (the console's createJobs: composer, then insertJobs). */
async function viaApi(template: JobTemplate): Promise<string> {
  const [queue] = await findQueuesByName(pool, tenant.id, ["default"]);
  const id = randomUUID();
  const inserted = await insertJobs(
    pool,
    tenant,
    [{ id, queue_id: queue!.id, run_at: null, delay_ms: 0, expires_at: null, idempotency_key: null, request_hash: null, ...jobColumnsFromTemplate(template, queue!) }],
    60_000,
  );
  expect(inserted).toHaveLength(1);
  return id;
}

/** The job a schedule storing the template makes of an occurrence (the materialiser's insertOccurrenceJobs). */
async function viaSchedule(template: JobTemplate): Promise<string> {
  const scheduleId = randomUUID();
  await pool.query(
    `INSERT INTO schedules (id, tenant_id, queue_id, shard, name, cron, timezone, job_template, updated_at)
     VALUES ($1, $2, $3, $4, $5, '0 * * * *', 'UTC', $6, now())`,
    [scheduleId, tenant.id, tenant.queueId, tenant.shard, `s-${scheduleId}`, template],
  );
  const { rows } = await pool.query<{ job_template: JobTemplate }>(`SELECT job_template FROM schedules WHERE id = $1`, [scheduleId]);
  const id = randomUUID();
  const at = new Date();
  const created = await insertOccurrenceJobs(
    pool,
    [{ scheduleId, template: rows[0]!.job_template, id, dueAt: at, occurrenceAt: at, idempotencyKey: `schedule:${scheduleId}:x`, occurrence: { nominal: "x", offsetMinutes: 0 } }],
    60_000,
  );
  expect(created).toBe(1);
  return id;
}

/** A stored job without the columns each path sets its own way, and without what the occurrence adds to its metadata. */
async function composed(id: string): Promise<Record<string, unknown>> {
  const { rows } = await pool.query<Record<string, unknown>>(`SELECT * FROM jobs WHERE id = $1`, [id]);
  const row = { ...rows[0]! };
  for (const column of OWN) delete row[column];
  const { occurrence: _occurrence, ...metadata } = row.metadata as Record<string, unknown>;
  return { ...row, metadata };
}

const url = "https://93.184.216.34/hook";

describe("one job-row composer for API creates and schedule occurrences", () => {
  it.each<[string, JobTemplate]>([
    ["a bare target (every fallback: constants and the queue's defaults)", { target: { url } }],
    ["null fields (as absent ones)", { target: { url, method: null, headers: null, body: null, timeoutMs: null }, priority: null, maxAttempts: null, backoff: null, callbackUrl: null, dependencyKey: null, metadata: null }],
    [
      "every field set",
      {
        target: { method: "PUT", url: "https://93.184.216.34:8443/x?a=1", headers: { "x-a": "1", "x-b": "it's" }, body: "it's a body", timeoutMs: 1234 },
        priority: -5,
        maxAttempts: 2,
        backoff: { strategy: "exponential", baseMs: 10, maxMs: 1000, jitter: "full" },
        callbackUrl: "https://93.184.216.34/cb",
        dependencyKey: "payments",
        metadata: { team: "a", nested: { n: null, list: [1, "x"] } },
      },
    ],
    ["the dependency from the target's host and port", { target: { method: "GET", url: "https://93.184.216.34:8443/y", headers: {} }, priority: 0, metadata: {} }],
  ])("stores the same row from %s", async (_name, template) => {
    const api = await composed(await viaApi(template));
    const occurrence = await composed(await viaSchedule(template));
    expect(occurrence).toEqual(api);
    // The template's own values did arrive (a row of nothing but defaults would also be equal).
    expect(api).toMatchObject({ url: template.target.url, method: template.target.method ?? "POST" });
  });

  it("takes the queue's defaults as they are when the job is made", async () => {
    const template: JobTemplate = { target: { url } };
    await pool.query(`UPDATE queues SET default_timeout_ms = 9876 WHERE id = $1`, [tenant.queueId]);
    const api = await composed(await viaApi(template));
    const occurrence = await composed(await viaSchedule(template));
    expect(occurrence).toEqual(api);
    expect(api).toMatchObject({ timeout_ms: 9876, max_attempts: 7, backoff: { strategy: "fixed", baseMs: 250 } });
  });
});
