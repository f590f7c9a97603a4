// The worker's batched starts and completions against the real Postgres: per-row fences in
// one statement, a failed batch settled row by row, nothing acknowledged before it committed.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type pg from "pg";
import { createPool, sql } from "@tick/db";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { startTcpProxy, waitFor } from "@tick/testing";
import { createAttemptCompleter } from "../src/execution/attempt-completer.js";
import { createAttemptStarter } from "../src/execution/attempt-starter.js";

const quiet = { info() {}, warn() {}, error() {}, debug() {} } as never;

let db: TestDatabase;
let pool: pg.Pool;
let tenant: { id: string; queueId: string; shard: number };

beforeEach(async () => {
  db = await createTestDatabase(testServerUrl());
  pool = createPool(db.url, { max: 5 });
  const { id, queueId, shard } = await createTestTenant(pool, { shardCount: 4 });
  tenant = { id, queueId, shard };
});

afterEach(async () => {
  await pool.end();
  await db.drop();
});

/** `n` jobs dispatched as the claim leaves them: version 2, fencing token 1, a pending current attempt. */
async function dispatchedJobs(n: number, flowKey: (i: number) => string | null = () => null): Promise<{ attemptId: string; jobId: string; version: number }[]> {
  const jobs = await sql.insertJobs(
    pool,
    tenant,
    Array.from({ length: n }, (_, i) =>
      newTestJob(tenant.queueId, {
        url: "http://127.0.0.1:1/",
        body: "{}",
        max_attempts: 3,
        backoff: { strategy: "fixed", baseMs: 100, maxMs: 100, jitter: "none" },
        flow_key: flowKey(i),
      }),
    ),
    86_400_000,
  );
  const out = [];
  for (const job of jobs) {
    const attemptId = crypto.randomUUID();
    await pool.query(`UPDATE jobs SET status = 'dispatched', version = version + 1, fencing_token = 1, current_attempt_id = $2 WHERE id = $1`, [job.id, attemptId]);
    await pool.query(
      `INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status) SELECT $1, id, tenant_id, 1, 1, version, 1, 'pending' FROM jobs WHERE id = $2`,
      [attemptId, job.id],
    );
    out.push({ attemptId, jobId: job.id, version: 2 });
  }
  return out;
}

const success = (s: sql.StartedAttempt, attemptId: string, over: Partial<sql.CompleteAttemptArgs> = {}): sql.CompleteAttemptArgs => ({
  attemptId,
  jobId: s.job_id,
  version: s.version,
  fencingToken: s.fencing_token,
  outcome: "success",
  decision: { kind: "succeeded" },
  httpStatus: 200,
  error: null,
  result: { status: 200, body: "ok" },
  durationMs: 3,
  ...over,
});

async function startAll(rows: { attemptId: string; jobId: string; version: number }[]) {
  const started = await sql.startAttempts(pool, rows, { workerId: "w1", leaseMs: 30_000 });
  return rows.map((r) => started.get(r.attemptId)!);
}

const statuses = async (ids: string[]) =>
  (await pool.query<{ id: string; status: string; attempt: string; late: number }>(
    `SELECT j.id, j.status, a.status AS attempt, a.late_completions AS late FROM jobs j JOIN attempts a ON a.job_id = j.id WHERE j.id = ANY($1::uuid[])`,
    [ids],
  )).rows.reduce<Record<string, { status: string; attempt: string; late: number }>>((m, r) => ({ ...m, [r.id]: r }), {});

describe("batched starts", () => {
  it("starts every row that still holds its conditions and leaves the others untouched", async () => {
    const rows = await dispatchedJobs(4);
    // One message is stale (an older version), one names an attempt that is not the job's current one.
    const stale = { ...rows[1]!, version: 1 };
    const wrongAttempt = { ...rows[2]!, attemptId: crypto.randomUUID() };
    const started = await sql.startAttempts(pool, [rows[0]!, stale, wrongAttempt, rows[3]!], { workerId: "w1", leaseMs: 30_000 });
    expect([...started.keys()].sort()).toEqual([rows[0]!.attemptId, rows[3]!.attemptId].sort());
    expect(started.get(rows[0]!.attemptId)).toMatchObject({ job_id: rows[0]!.jobId, version: 3, attempt_number: 1, fencing_token: "1" });
    const now = await statuses(rows.map((r) => r.jobId));
    expect(now[rows[0]!.jobId]).toMatchObject({ status: "running", attempt: "running" });
    expect(now[rows[1]!.jobId]).toMatchObject({ status: "dispatched", attempt: "pending" });
    expect(now[rows[2]!.jobId]).toMatchObject({ status: "dispatched", attempt: "pending" });
    expect(now[rows[3]!.jobId]).toMatchObject({ status: "running", attempt: "running" });
  });

  it("the starter hands back null for a row the batch did not start (the single path decides)", async () => {
    const rows = await dispatchedJobs(2);
    const starter = createAttemptStarter({ pool, logger: quiet, workerId: "w1", leaseMs: 30_000, lingerMs: 5, maxBatch: 50 });
    const before = performance.now();
    const [a, b] = await Promise.all([starter.start(rows[0]!), starter.start({ ...rows[1]!, version: 9 })]);
    expect(a?.started.job_id).toBe(rows[0]!.jobId);
    // The lease is measured from when the granting statement was sent, not from when its answer came.
    expect(a!.sentAt).toBeGreaterThanOrEqual(before);
    expect(b).toBeNull();
  });

  it("a message delivered twice into one batch is started for one of its callers only", async () => {
    const [row] = await dispatchedJobs(1);
    const starter = createAttemptStarter({ pool, logger: quiet, workerId: "w1", leaseMs: 30_000, lingerMs: 5, maxBatch: 50 });
    const results = await Promise.all([starter.start(row!), starter.start(row!)]);
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });
});

describe("batched lease renewal", () => {
  it("renews every row still holding its lease, skips a locked one as busy, and reports the rest lost", async () => {
    const rows = await dispatchedJobs(3);
    await startAll(rows);
    await pool.query(`UPDATE attempts SET status = 'lease_expired' WHERE id = $1`, [rows[2]!.attemptId]);
    const holder = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM attempts WHERE id = $1 FOR UPDATE`, [rows[1]!.attemptId]);
      const { renewed, busy } = await sql.renewAttemptLeases(pool, rows.map((r) => r.attemptId), 30_000);
      expect([...renewed]).toEqual([rows[0]!.attemptId]);
      expect([...busy]).toEqual([rows[1]!.attemptId]);
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
  });
});

describe("batched completions", () => {
  it("a row that lost its fence is a per-row result; the winners commit with their webhooks", async () => {
    const rows = await dispatchedJobs(4);
    const s = await startAll(rows);
    await pool.query(`UPDATE jobs SET callback_url = 'http://127.0.0.1:1/cb' WHERE id = $1`, [rows[0]!.jobId]);
    const results = await sql.completeAttempts(pool, [
      success(s[0]!, rows[0]!.attemptId),
      success(s[1]!, rows[1]!.attemptId, { fencingToken: "7" }), // fenced out: another attempt holds the job
      success(s[2]!, rows[2]!.attemptId, { version: s[2]!.version - 1 }), // stale version
      success(s[3]!, rows[3]!.attemptId, { outcome: "retryable", decision: { kind: "retry", dueInMs: 60_000 }, httpStatus: 503, error: { kind: "retryable" }, result: null }),
    ]);
    expect(results.map((r) => r.won)).toEqual([true, false, false, true]);
    expect(results[0]!.status).toBe("succeeded");
    expect(results[3]!.status).toBe("scheduled");
    expect(results[3]!.dueAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    const now = await statuses(rows.map((r) => r.jobId));
    expect(now[rows[0]!.jobId]).toMatchObject({ status: "succeeded", attempt: "succeeded", late: 0 });
    expect(now[rows[1]!.jobId]).toMatchObject({ status: "running", attempt: "running", late: 1 });
    expect(now[rows[2]!.jobId]).toMatchObject({ status: "running", attempt: "running", late: 1 });
    expect(now[rows[3]!.jobId]).toMatchObject({ status: "scheduled", attempt: "failed", late: 0 });
    const hooks = await pool.query(`SELECT d.job_id FROM webhook_deliveries d JOIN outbox o ON o.job_id = d.job_id AND o.kind = 'webhook'`);
    expect(hooks.rows).toEqual([{ job_id: rows[0]!.jobId }]);
  });

  it("two batches ending jobs of the same flow keys in opposite key orders never deadlock", { timeout: 60_000 }, async () => {
    // Each key's in-flight count is a flow_keys row the jobs trigger updates as a job leaves flight. Batch a
    // ends its jobs in ascending key order and batch b in descending order, at the same moment, round after
    // round: the rows must be taken in one order (the server would otherwise fail one batch as a deadlock).
    const keys = 30;
    for (let round = 0; round < 15; round++) {
      const rows = await dispatchedJobs(2 * keys, (i) => `key-${String(i % keys).padStart(2, "0")}`);
      const started = await startAll(rows);
      const done = rows.map((r, i) => success(started[i]!, r.attemptId));
      const a = done.filter((_, i) => i < keys);
      const b = done.filter((_, i) => i >= keys).reverse();
      const results = await Promise.allSettled([sql.completeAttempts(pool, a), sql.completeAttempts(pool, b)]);
      const failed = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
      expect(failed, `round ${round}`).toEqual([]);
    }
    const { rows } = await pool.query<{ in_flight: number }>(`SELECT in_flight FROM flow_keys WHERE queue_id = $1`, [tenant.queueId]);
    expect(rows).toHaveLength(keys);
    expect(rows.every((r) => r.in_flight === 0)).toBe(true);
  });

  it("a late completion that waits on jobs the reaper has locked does not deadlock the reaper's settlement of their key", { timeout: 30_000 }, async () => {
    // The reaper locks lost attempts' jobs, then settles them (their key's counter moves). A worker's completion
    // of the same jobs arriving in between waits for their rows; it must not hold the key's counter meanwhile,
    // or the settlement waits for it in turn and Postgres fails one of the two as a deadlock.
    const rows = await dispatchedJobs(2, () => "k");
    const started = await sql.startAttempts(pool, rows, { workerId: "w1", leaseMs: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const reaper = await pool.connect();
    try {
      await reaper.query("BEGIN");
      const lost = await sql.lockExpiredLeases(reaper, tenant.shard, 0, 10);
      expect(lost).toHaveLength(2);
      const late = sql.completeAttempts(pool, rows.map((r) => success(started.get(r.attemptId)!, r.attemptId)));
      await waitFor(async () => {
        const { rows: waiting } = await pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%input AS%'`);
        return waiting.length > 0;
      }, { timeoutMs: 5_000 });
      const settled = await sql.settleExpiredLeases(reaper, lost.map((l) => ({ lease: l, decision: { kind: "retry", dueInMs: 60_000 } })), 0);
      await reaper.query("COMMIT");
      expect(settled.size).toBe(2);
      expect((await late).map((r) => r.won)).toEqual([false, false]);
    } finally {
      reaper.release();
    }
    const { rows: keys } = await pool.query<{ in_flight: number }>(`SELECT in_flight FROM flow_keys WHERE queue_id = $1 AND key = 'k'`, [tenant.queueId]);
    expect(keys).toEqual([{ in_flight: 0 }]);
  });

  it("a connection that completed jobs while the table was near empty reads only its batch's jobs once the table grew and its plans aged", { timeout: 60_000 }, async () => {
    // The completion is a named statement, planned for good by its connection's first calls: made while jobs was
    // near empty, that plan scans the whole table, and a table grown without new statistics (autovacuum off or not
    // yet round) keeps it. The pool replans a connection whose plans are older than planMaxAgeMs.
    const planMaxAgeMs = 300;
    const completions = createPool(db.url, { max: 1, planMaxAgeMs });
    const complete = async (rows: { attemptId: string; jobId: string; version: number }[], measure = false) => {
      const started = await startAll(rows);
      const client = await completions.connect();
      try {
        // The transaction's table counters start from what this backend has not reported yet: report it first.
        await client.query("SELECT pg_stat_force_next_flush()");
        await client.query("BEGIN");
        const results = await sql.completeAttempts(client, rows.map((r, i) => success(started[i]!, r.attemptId)));
        const { rows: reads } = await client.query<{ seq_scan: string }>(`SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'jobs'::regclass`);
        await client.query("COMMIT");
        expect(results.every((r) => r.won)).toBe(true);
        return measure ? Number(reads[0]!.seq_scan) : 0;
      } finally {
        client.release();
      }
    };
    try {
      for (let round = 0; round < 8; round++) await complete(await dispatchedJobs(3, () => "early"));
      for (let i = 0; i < 10; i++) {
        const chunk = Array.from({ length: 2_000 }, () => newTestJob(tenant.queueId, { url: "http://127.0.0.1:1/", body: "{}", delay_ms: 3_600_000, flow_key: "later" }));
        await sql.insertJobs(pool, tenant, chunk, 86_400_000);
      }
      await new Promise((r) => setTimeout(r, planMaxAgeMs + 50));
      expect(await complete(await dispatchedJobs(10, () => "early"), true)).toBe(0);
    } finally {
      await completions.end();
    }
  });

  it("a row whose data makes the batch fail costs only that row: the others commit one by one", async () => {
    const rows = await dispatchedJobs(3);
    const s = await startAll(rows);
    const completer = createAttemptCompleter({ pool, logger: quiet, lingerMs: 5, maxBatch: 50, retries: 1 });
    // jsonb refuses \u0000, so the whole batch statement fails.
    const bad = success(s[1]!, rows[1]!.attemptId, { result: { body: "\u0000" } });
    const settled = await Promise.allSettled([completer.complete(success(s[0]!, rows[0]!.attemptId)), completer.complete(bad), completer.complete(success(s[2]!, rows[2]!.attemptId))]);
    expect(settled.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(settled[0]).toMatchObject({ value: { won: true, status: "succeeded" } });
    const now = await statuses(rows.map((r) => r.jobId));
    expect(now[rows[0]!.jobId]!.status).toBe("succeeded");
    expect(now[rows[1]!.jobId]!.status).toBe("running"); // its lease runs out and the reaper retries it
    expect(now[rows[2]!.jobId]!.status).toBe("succeeded");
  });

  it("a batch whose commit answer is lost is not lost: the retried rows find their completions committed", async () => {
    const rows = await dispatchedJobs(3);
    const s = await startAll(rows);
    const url = new URL(db.url);
    const proxy = await startTcpProxy({ targetHost: url.hostname, targetPort: Number(url.port || 5432) });
    const cutPool = createPool(proxy.url(db.url), { max: 2 });
    try {
      await cutPool.query("SELECT 1");
      // The batch statement reaches Postgres and commits; its answer never comes back.
      const sprung = proxy.cutAfterRequest((chunk) => chunk.includes("unnest"));
      const completer = createAttemptCompleter({ pool: cutPool, logger: quiet, lingerMs: 5, maxBatch: 50 });
      const results = await Promise.all(rows.map((r, i) => completer.complete(success(s[i]!, r.attemptId))));
      await sprung;
      expect(results.map((r) => [r.won, r.status])).toEqual(rows.map(() => [true, "succeeded"]));
      const now = await statuses(rows.map((r) => r.jobId));
      // Committed once, and the retry did not count a false late completion.
      for (const r of rows) expect(now[r.jobId]).toMatchObject({ status: "succeeded", attempt: "succeeded", late: 0 });
    } finally {
      await cutPool.end().catch(() => {});
      await proxy.close();
    }
  });

  it("a completion is not acknowledged before its batch commits", async () => {
    const rows = await dispatchedJobs(2);
    const s = await startAll(rows);
    const completer = createAttemptCompleter({ pool, logger: quiet, lingerMs: 5, maxBatch: 50 });
    // Hold the first job's row lock, so the batch statement (both rows) waits on it.
    const holder = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, [rows[0]!.jobId]);
      let acknowledged = 0;
      const done = rows.map((r, i) => completer.complete(success(s[i]!, r.attemptId)).then((res) => (acknowledged++, res)));
      await waitFor(
        async () => (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%unnest%'`)).rowCount,
        { timeoutMs: 10_000, description: "the batch statement waits on the row lock" },
      );
      expect(acknowledged).toBe(0);
      expect(Object.values(await statuses(rows.map((r) => r.jobId))).map((r) => r.status)).toEqual(["running", "running"]);
      await holder.query("COMMIT");
      const results = await Promise.all(done);
      expect(results.map((r) => r.won)).toEqual([true, true]);
    } finally {
      holder.release();
    }
  });
});
