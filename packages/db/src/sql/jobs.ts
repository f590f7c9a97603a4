// Hot-path SQL for jobs: one function per statement, named after what it does. Every statement is
// scoped by tenant_id; every state change is conditional on the expected status and bumps version.
import type { JobState } from "@tick/core";
import { JOB_STATUS_WRITES, stateLiteral } from "./job-status-writes.js";
import type { JobTemplateColumns, QueueDefaults } from "./job-template.js";
import { ATTEMPTS_ALL, JOB_COLUMNS, JOBS_ALL } from "./lifecycle.js";
import { liveJobsOfTenant } from "./live-jobs.js";
import type { Queryable } from "./types.js";

export interface JobRow {
  id: string;
  tenant_id: string;
  queue_id: string;
  shard: number;
  status: JobState;
  version: number;
  due_at: Date;
  expires_at: Date | null;
  priority: number;
  idempotency_key: string | null;
  request_hash: string | null;
  idempotency_expires_at: Date | null;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
  timeout_ms: number;
  attempt_count: number;
  max_attempts: number;
  backoff: { strategy: "exponential" | "fixed"; baseMs: number; maxMs: number; jitter: "full" | "none" };
  fencing_token: string;
  current_attempt_id: string | null;
  dependency_key: string | null;
  callback_url: string | null;
  metadata: Record<string, unknown>;
  last_error: unknown;
  result: unknown;
  schedule_id: string | null;
  occurrence_at: Date | null;
  replay_id: string | null;
  cancel_requested_at: Date | null;
  /** What the tenant isolates inside the queue (docs/api.md "Flow keys"); null: none. */
  flow_key: string | null;
  /** The debounce key this job collects creates for while it is scheduled; null: none. */
  debounce_key: string | null;
  /** W3C traceparent of the job's span; null only for jobs created before traces existed. */
  traceparent: string | null;
  tracestate: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  /** Present on reads that join the queue (findJob, listJobs). */
  queue_name?: string;
}

/**
 * A job to insert; due time is resolved by the database clock (run_at, else now() + delay_ms). The columns its
 * template decides are JobTemplateColumns (jobColumnsFromTemplate composes them, job-template.ts).
 */
export interface NewJob extends Omit<JobTemplateColumns, "dependency_key"> {
  /** Chosen by the caller so results map back to inputs without relying on RETURNING order. */
  id: string;
  queue_id: string;
  run_at: string | null;
  delay_ms: number;
  expires_at: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  /** Always set by an API create (dependencyOf); null only for a job inserted without one (the tests' fixture). */
  dependency_key: string | null;
  /** The job's trace context; null: the database starts a new trace (new_traceparent()). */
  traceparent?: string | null;
  tracestate?: string | null;
  /** The debounce window this job opens (a debounced create); absent: none. */
  debounce_key?: string | null;
}

/**
 * Inserts jobs in one statement. A job whose idempotency key the tenant already holds is skipped: the
 * key is taken in `idempotency_keys` by the same statement (ON CONFLICT DO NOTHING waits for a concurrent
 * insert of the same key to commit or abort, so concurrent identical requests converge on one job), and
 * it keeps holding after the job moves to history. Returns the rows actually inserted.
 *
 * Only what the database decides comes back over the wire (the due, expiry and creation times as epoch
 * milliseconds, and the stored trace context, the caller's or the one the column default started); the rest of each row is the caller's own input,
 * put together here (RETURNING * would make the client parse 33 columns a row, most of them just sent: two
 * thirds of a bulk insert's client CPU). The test beside this file holds the composed rows equal to
 * the stored ones, so a new column or default cannot drift unseen.
 */
export async function insertJobs(
  db: Queryable,
  tenant: { id: string; shard: number },
  jobs: NewJob[],
  idempotencyTtlMs: number,
): Promise<JobRow[]> {
  const { rows } = await db.query<InsertedJob>(
    `WITH x AS (
       SELECT * FROM jsonb_to_recordset($3::jsonb) AS x(
              id uuid, queue_id uuid, run_at timestamptz, delay_ms bigint, expires_at timestamptz, priority int,
              idempotency_key text, request_hash text, method text, url text, headers jsonb, body text,
              timeout_ms int, max_attempts int, backoff jsonb, dependency_key text, callback_url text, metadata jsonb,
              traceparent text, tracestate text, flow_key text, debounce_key text)
     ), keys AS (
       INSERT INTO idempotency_keys (tenant_id, key, job_id, request_hash, expires_at)
       SELECT $1, x.idempotency_key, x.id, x.request_hash, now() + make_interval(secs => $4 / 1000.0)
         FROM x WHERE x.idempotency_key IS NOT NULL
       ON CONFLICT (tenant_id, key) DO NOTHING
       RETURNING job_id
     )
     INSERT INTO jobs (id, tenant_id, queue_id, shard, status, version, due_at, expires_at, priority,
                       idempotency_key, request_hash, idempotency_expires_at, method, url, headers, body,
                       timeout_ms, max_attempts, backoff, dependency_key, callback_url, metadata, traceparent, tracestate, flow_key, debounce_key, updated_at)
     SELECT x.id, $1, x.queue_id, $2, ${stateLiteral(JOB_STATUS_WRITES.insertJobs.creates)}, 1,
            COALESCE(x.run_at, now() + make_interval(secs => x.delay_ms / 1000.0)), x.expires_at, x.priority,
            x.idempotency_key, x.request_hash,
            CASE WHEN x.idempotency_key IS NULL THEN NULL ELSE now() + make_interval(secs => $4 / 1000.0) END,
            x.method, x.url, x.headers, x.body, x.timeout_ms, x.max_attempts, x.backoff, x.dependency_key,
            x.callback_url, x.metadata, coalesce(x.traceparent, new_traceparent()), x.tracestate, x.flow_key, x.debounce_key, now()
       FROM x WHERE x.idempotency_key IS NULL OR x.id IN (SELECT job_id FROM keys)
     RETURNING id, ${epochMs("due_at")} AS due_at, ${epochMs("expires_at")} AS expires_at,
               ${epochMs("idempotency_expires_at")} AS idempotency_expires_at, ${epochMs("created_at")} AS created_at,
               traceparent`,
    [tenant.id, tenant.shard, JSON.stringify(jobs), idempotencyTtlMs],
  );
  const input = new Map(jobs.map((j) => [j.id, j]));
  return rows.map((r) => insertedRow(tenant, input.get(r.id)!, r));
}

/** What an insert's RETURNING carries: the values the database decided, times as epoch milliseconds. */
interface InsertedJob {
  id: string;
  due_at: number;
  expires_at: number | null;
  idempotency_expires_at: number | null;
  created_at: number;
  /** The stored trace context: the caller's, or the one the column default started. */
  traceparent: string | null;
}

/** A timestamptz as epoch milliseconds (float8): parsed as a number, not as a date string per value. */
const epochMs = (column: string) => `extract(epoch FROM ${column})::float8 * 1000`;

/** `new Date(ms)` keeps the millisecond (truncated), as pg's own parse of the timestamp text does. */
const dateOf = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));

/** An inserted job's row: the caller's input, the tenant's shard and the database's values (insertJobs). */
function insertedRow(tenant: { id: string; shard: number }, job: NewJob, r: InsertedJob): JobRow {
  const createdAt = new Date(r.created_at);
  return {
    id: job.id,
    tenant_id: tenant.id,
    queue_id: job.queue_id,
    shard: tenant.shard,
    status: JOB_STATUS_WRITES.insertJobs.creates,
    version: 1,
    due_at: new Date(r.due_at),
    expires_at: dateOf(r.expires_at),
    priority: job.priority,
    idempotency_key: job.idempotency_key,
    request_hash: job.request_hash,
    idempotency_expires_at: dateOf(r.idempotency_expires_at),
    method: job.method,
    url: job.url,
    headers: job.headers,
    body: job.body,
    timeout_ms: job.timeout_ms,
    attempt_count: 0,
    max_attempts: job.max_attempts,
    backoff: job.backoff as JobRow["backoff"],
    fencing_token: "0",
    current_attempt_id: null,
    dependency_key: job.dependency_key,
    callback_url: job.callback_url,
    metadata: job.metadata,
    last_error: null,
    result: null,
    schedule_id: null,
    occurrence_at: null,
    replay_id: null,
    cancel_requested_at: null,
    flow_key: job.flow_key,
    debounce_key: job.debounce_key ?? null,
    traceparent: r.traceparent,
    tracestate: job.tracestate ?? null,
    created_at: createdAt,
    updated_at: createdAt,
    finished_at: null,
  };
}

/**
 * Frees idempotency keys whose promised window has passed, so a new job may take them. Runs in the
 * creating transaction, before the insert (the maintenance loop also releases them in batches).
 */
export async function releaseExpiredIdempotencyKeys(db: Queryable, tenantId: string, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys WHERE tenant_id = $1 AND key = ANY($2::text[]) AND expires_at <= now()`,
    [tenantId, keys],
  );
  return rowCount ?? 0;
}

/**
 * The jobs holding these keys (live or in history), with the key and request hash they were created with,
 * and whether the key's window has ended by the database clock (then it may be released and taken again).
 */
export async function findJobsByIdempotencyKeys(db: Queryable, tenantId: string, keys: string[]): Promise<(JobRow & { key_expired: boolean; debounced: boolean })[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<JobRow & { key_expired: boolean; debounced: boolean }>(
    `SELECT j.*, k.key AS idempotency_key, k.request_hash AS request_hash, k.expires_at <= now() AS key_expired, k.debounced
       FROM idempotency_keys k JOIN ${JOBS_ALL} j ON j.id = k.job_id AND j.tenant_id = k.tenant_id
      WHERE k.tenant_id = $1 AND k.key = ANY($2::text[])`,
    [tenantId, keys],
  );
  return rows;
}

export interface QueueDefaultsRow extends QueueDefaults {
  id: string;
  name: string;
}

/** The named queues of a tenant with the defaults a new job takes from them. */
export async function findQueuesByName(db: Queryable, tenantId: string, names: string[]): Promise<QueueDefaultsRow[]> {
  const { rows } = await db.query<QueueDefaultsRow>(
    `SELECT id, name, default_max_attempts, default_backoff, default_timeout_ms FROM queues WHERE tenant_id = $1 AND name = ANY($2::text[])`,
    [tenantId, names],
  );
  return rows;
}

/**
 * The tenant's jobs not yet finished (scheduled, dispatched, running), in the caller's snapshot: the sum of its
 * rows in tenant_live_job_counts, which triggers on jobs keep. `rows` is how many rows the sum read: one per
 * statement that changed the tenant's live jobs since the last fold (compactLiveJobCounts). The rows sit under the
 * tenant's shard (fixed at its creation), which the caller already holds from authentication.
 */
export async function countPendingJobs(db: Queryable, tenant: { id: string; shard: number }): Promise<{ pending: number; rows: number }> {
  const { rows } = await db.query<{ pending: number; rows: number }>(
    `SELECT coalesce(sum(n), 0)::int AS pending, count(*)::int AS rows FROM tenant_live_job_counts WHERE shard = $1 AND tenant_id = $2`,
    [tenant.shard, tenant.id],
  );
  return rows[0]!;
}

/**
 * Folds the live-job counts (tenant_live_job_counts) of these shards' tenants (or of the one tenant `tenantId`)
 * into one row per tenant, at most `batch` tenants per call (those with the most rows first), dropping the tenants
 * whose sum is 0; returns the rows deleted. It never waits: it takes the rows it can lock (SKIP LOCKED; rows are
 * never updated, so a row's ctid stays its own), deletes them and inserts their sum in the same statement, so
 * beside any writer and any other fold every row is counted exactly once.
 */
export async function compactLiveJobCounts(db: Queryable, shards: readonly number[], batch: number, tenantId: string | null = null): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH busy AS (
       SELECT shard, tenant_id FROM tenant_live_job_counts
        WHERE shard = ANY($1::int[]) AND ($3::uuid IS NULL OR tenant_id = $3)
        GROUP BY shard, tenant_id HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT $2
     ), picked AS (
       SELECT c.ctid AS row FROM tenant_live_job_counts c JOIN busy b ON c.shard = b.shard AND c.tenant_id = b.tenant_id
          FOR UPDATE OF c SKIP LOCKED
     ), gone AS (
       DELETE FROM tenant_live_job_counts c USING picked p WHERE c.ctid = p.row RETURNING c.shard, c.tenant_id, c.n
     ), folded AS (
       INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
       SELECT shard, tenant_id, sum(n) FROM gone GROUP BY shard, tenant_id HAVING sum(n) <> 0
     )
     SELECT count(*)::int AS n FROM gone`,
    [shards, batch, tenantId],
  );
  return rows[0]!.n;
}

export async function findJob(db: Queryable, tenantId: string, jobId: string): Promise<JobRow | null> {
  const { rows } = await db.query<JobRow>(
    `SELECT j.*, q.name AS queue_name FROM ${JOBS_ALL} j JOIN queues q ON q.id = j.queue_id WHERE j.tenant_id = $1 AND j.id = $2`,
    [tenantId, jobId],
  );
  return rows[0] ?? null;
}

/**
 * Records a cancel on a running job (first_request: not recorded before) without touching its version (the running attempt's completion is
 * fenced on the version, and it must still be able to record what happened). The worker makes no
 * further attempt once cancel_requested_at is set.
 */
export async function requestCancelOfRunningJob(db: Queryable, tenantId: string, jobId: string): Promise<(JobRow & { first_request: boolean }) | null> {
  // The prior value is read under the row lock the update takes anyway, so "first" is exact under races.
  const { rows } = await db.query<JobRow & { first_request: boolean }>(
    `UPDATE jobs j SET cancel_requested_at = COALESCE(j.cancel_requested_at, now()), updated_at = now()
       FROM (SELECT id, cancel_requested_at AS prior FROM jobs WHERE tenant_id = $1 AND id = $2 AND status = 'running' FOR UPDATE) p
      WHERE j.id = p.id AND j.status = 'running'
      RETURNING j.*, p.prior IS NULL AS first_request, (SELECT q.name FROM queues q WHERE q.id = j.queue_id) AS queue_name`,
    [tenantId, jobId],
  );
  return rows[0] ?? null;
}

export interface ListJobsFilter {
  statuses?: string[];
  queue?: string;
  scheduleId?: string;
  createdAfter?: string;
  createdBefore?: string;
  /** Exactly this idempotency key (the caller's, or an occurrence's). */
  idempotencyKey?: string;
  /** Exactly this dependency (circuit-breaker key: the target host unless the job named one). */
  dependency?: string;
  /** Exactly this flow key. */
  flowKey?: string;
  /** Keyset cursor: rows strictly older than (createdAt, id). */
  before?: { at: string; id: string };
  limit: number;
}

/** The hot table's jobs that jobs_list_idx holds: all but those in flight (its predicate, word for word). */
const LISTED = `status IN ('scheduled', 'succeeded', 'dead', 'cancelled', 'expired', 'rate_limited')`;
/** The tenant's (`$1`) jobs in flight, through jobs_live_idx. */
const IN_FLIGHT_OF_TENANT = liveJobsOfTenant("$1", ["dispatched", "running"]);

/**
 * Newest first, keyset-paginated on (created_at, id) so deep pages cost the same as the first; live jobs and
 * history together. Three ordered, limited reads merged: the hot table's listing index (which leaves out jobs in
 * flight, so a claim and a start add no entry to it), the tenant's jobs in flight (at most its max_in_flight), and
 * history's listing index.
 */
export async function listJobs(db: Queryable, tenantId: string, f: ListJobsFilter): Promise<JobRow[]> {
  const match = `tenant_id = $1
        AND ($2::job_status[] IS NULL OR status = ANY($2::job_status[]))
        AND ($3::text IS NULL OR queue_id = (SELECT q.id FROM queues q WHERE q.tenant_id = $1 AND q.name = $3))
        AND ($4::uuid IS NULL OR schedule_id = $4)
        AND ($5::timestamptz IS NULL OR created_at > $5)
        AND ($6::timestamptz IS NULL OR created_at < $6)
        AND ($7::timestamptz IS NULL OR (created_at, id) < ($7, $8::uuid))
        AND ($10::text IS NULL OR idempotency_key = $10)
        AND ($11::text IS NULL OR dependency_key = $11)
        AND ($12::text IS NULL OR flow_key = $12)`;
  const page = (table: string, where: string) =>
    `(SELECT ${JOB_COLUMNS} FROM ${table} WHERE ${where} AND ${match} ORDER BY created_at DESC, id DESC LIMIT $9)`;
  const { rows } = await db.query<JobRow>(
    `SELECT j.*, q.name AS queue_name FROM (
       ${page("jobs", LISTED)}
       UNION ALL
       ${page("jobs", IN_FLIGHT_OF_TENANT)}
       UNION ALL
       ${page("history.jobs", "true")}
     ) j JOIN queues q ON q.id = j.queue_id
      ORDER BY j.created_at DESC, j.id DESC
      LIMIT $9`,
    [
      tenantId,
      f.statuses ?? null,
      f.queue ?? null,
      f.scheduleId ?? null,
      f.createdAfter ?? null,
      f.createdBefore ?? null,
      f.before?.at ?? null,
      f.before?.id ?? null,
      f.limit,
      f.idempotencyKey ?? null,
      f.dependency ?? null,
      f.flowKey ?? null,
    ],
  );
  return rows;
}

export interface AttemptRow {
  id: string;
  job_id: string;
  number: number;
  fencing_token: string;
  status: string;
  worker_id: string | null;
  lease_expires_at: Date | null;
  dispatched_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  outcome: string | null;
  http_status: number | null;
  error: unknown;
  duration_ms: number | null;
}

export async function listAttempts(db: Queryable, tenantId: string, jobId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT * FROM ${ATTEMPTS_ALL} WHERE tenant_id = $1 AND job_id = $2 ORDER BY number`,
    [tenantId, jobId],
  );
  return rows;
}

export interface DeadJobsFilter {
  queue?: string;
  errorKind?: string;
  dependency?: string;
  httpStatus?: number;
  since?: string;
  until?: string;
  /** Keyset cursor: rows strictly older than (finished_at, id). */
  before?: { at: string; id: string };
  limit: number;
}

/** Dead jobs of a tenant matching a DLQ filter: parameters $1 (tenant) to $7, joined to the queue as q. */
export const DEAD_JOB_MATCH = `j.tenant_id = $1 AND j.status = 'dead'
        AND ($2::text IS NULL OR q.name = $2)
        AND ($3::text IS NULL OR j.last_error->>'kind' = $3)
        AND ($4::text IS NULL OR j.dependency_key = $4)
        AND ($5::int IS NULL OR (j.last_error->>'status')::int = $5)
        AND ($6::timestamptz IS NULL OR j.finished_at >= $6)
        AND ($7::timestamptz IS NULL OR j.finished_at < $7)`;

export type DeadJobMatch = Omit<DeadJobsFilter, "before" | "limit">;

export const deadJobMatchParams = (tenantId: string, f: DeadJobMatch) => [
  tenantId,
  f.queue ?? null,
  f.errorKind ?? null,
  f.dependency ?? null,
  f.httpStatus ?? null,
  f.since ?? null,
  f.until ?? null,
];

/** The DLQ: dead jobs of a tenant, newest first, served by the partial index over dead rows. */
export async function listDeadJobs(db: Queryable, tenantId: string, f: DeadJobsFilter): Promise<JobRow[]> {
  const { rows } = await db.query<JobRow>(
    `SELECT j.*, q.name AS queue_name FROM jobs j JOIN queues q ON q.id = j.queue_id
      WHERE ${DEAD_JOB_MATCH}
        AND ($8::timestamptz IS NULL OR (j.finished_at, j.id) < ($8, $9::uuid))
      ORDER BY j.finished_at DESC, j.id DESC
      LIMIT $10`,
    [...deadJobMatchParams(tenantId, f), f.before?.at ?? null, f.before?.id ?? null, f.limit],
  );
  return rows;
}

/** Attempts of several jobs at once (one query for a page of jobs). */
export async function listAttemptsOfJobs(db: Queryable, tenantId: string, jobIds: string[]): Promise<AttemptRow[]> {
  if (jobIds.length === 0) return [];
  const { rows } = await db.query<AttemptRow>(
    `SELECT * FROM ${ATTEMPTS_ALL} WHERE tenant_id = $1 AND job_id = ANY($2::uuid[]) ORDER BY job_id, number`,
    [tenantId, jobIds],
  );
  return rows;
}

/**
 * A tenant's jobs by status for the dashboard: every live job and every dead job still in the DLQ, and
 * the jobs that finished otherwise in the last `windowHours` (live or already in history).
 */
export async function countJobsByStatus(db: Queryable, tenantId: string, windowHours: number): Promise<{ status: JobRow["status"]; n: number }[]> {
  const { rows } = await db.query<{ status: JobRow["status"]; n: number }>(
    `SELECT status, count(*)::int AS n FROM (
       SELECT status FROM jobs
        WHERE tenant_id = $1 AND ${LISTED} AND (finished_at IS NULL OR status = 'dead' OR finished_at > now() - make_interval(hours => $2))
       UNION ALL
       SELECT status FROM jobs WHERE ${IN_FLIGHT_OF_TENANT}
       UNION ALL
       SELECT status FROM history.jobs
        WHERE tenant_id = $1 AND finished_at > now() - make_interval(hours => $2) AND status <> 'dead'
     ) s GROUP BY status`,
    [tenantId, windowHours],
  );
  return rows;
}
