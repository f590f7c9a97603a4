// Debounce windows (docs/api.md "Debounce"): creates of a queue with the same debounce key fold into one job.
// A window is a debounces row, read and changed under a transaction-scoped advisory lock of its (queue, key),
// so concurrent creates of one key take turns; the job a trailing window folds into is locked too, and only a
// job still scheduled is changed (the claim skips a locked job; a job already dispatched is never changed).
// Every statement takes a whole batch's windows at once.
import type { JobTemplateColumns } from "./job-template.js";
import type { JobRow } from "./jobs.js";
import type { Queryable } from "./types.js";

export interface DebounceWindow {
  queue_id: string;
  key: string;
  job_id: string;
  mode: "trailing" | "leading";
  /** The window's job is scheduled and never dispatched (locked by this transaction): a trailing create may fold into it. */
  job_scheduled: boolean;
  /** now() is before window_until (a leading window is open). */
  open: boolean;
  /** now() is before max_until, or there is none. */
  before_max: boolean;
}

/** A (queue, debounce key) pair: one window. */
export interface DebounceKey {
  queueId: string;
  key: string;
}

const windowId = (queueId: string, key: string) => `${queueId}/${key}`;

/**
 * Takes the debounce locks of these windows for the rest of the transaction (in one order, so two batches
 * sharing keys never deadlock), then reads the windows that exist, locking each window's job while it is
 * scheduled. Keyed by `queueId/key`. The read is its own statement, so it sees every window committed before
 * the locks were granted.
 */
export async function lockDebounceWindows(db: Queryable, windows: readonly DebounceKey[]): Promise<Map<string, DebounceWindow>> {
  if (windows.length === 0) return new Map();
  const queueIds = windows.map((w) => w.queueId);
  const keys = windows.map((w) => w.key);
  await db.query(
    `SELECT pg_advisory_xact_lock(hashtextextended(s.q::text || s.k, 7411))
       FROM (SELECT DISTINCT q, k FROM unnest($1::uuid[], $2::text[]) AS x(q, k) ORDER BY q, k) s`,
    [queueIds, keys],
  );
  const { rows } = await db.query<Omit<DebounceWindow, "job_scheduled">>(
    `SELECT d.queue_id, d.key, d.job_id, d.mode, now() < d.window_until AS open, (d.max_until IS NULL OR now() < d.max_until) AS before_max
       FROM debounces d JOIN unnest($1::uuid[], $2::text[]) AS x(q, k) ON d.queue_id = x.q AND d.key = x.k`,
    [queueIds, keys],
  );
  const { rows: scheduled } = await db.query<{ id: string }>(
    // A job claimed once (fencing token above 0: waiting for a retry, or requeued before its call) was
    // dispatched: it is never changed, its window is over.
    `SELECT id FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'scheduled' AND fencing_token = 0 ORDER BY id FOR UPDATE`,
    [rows.map((r) => r.job_id)],
  );
  const locked = new Set(scheduled.map((r) => r.id));
  return new Map(rows.map((r) => [windowId(r.queue_id, r.key), { ...r, job_scheduled: locked.has(r.job_id) }]));
}

export interface DebounceFold extends DebounceKey {
  jobId: string;
  /** The template of the window's latest create: the job takes it. */
  columns: JobTemplateColumns;
  periodMs: number;
  /** Creates folded. */
  creates: number;
}

/**
 * Trailing creates fold into their windows' jobs (locked and scheduled: lockDebounceWindows), one statement for
 * all: each job takes its latest create's template (its payload) and is due `periodMs` from now, never past its
 * window's max_until; each window counts its creates. Returns the jobs changed; a job no longer scheduled is
 * left out.
 */
export async function foldIntoDebouncedJobs(db: Queryable, tenantId: string, folds: readonly DebounceFold[]): Promise<JobRow[]> {
  if (folds.length === 0) return [];
  const input = folds.map((f) => ({ job_id: f.jobId, queue_id: f.queueId, key: f.key, period_ms: f.periodMs, creates: f.creates, ...f.columns }));
  const { rows } = await db.query<JobRow>(
    `WITH x AS (
       SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(job_id uuid, queue_id uuid, key text, period_ms float8, creates int, method text, url text,
              headers jsonb, body text, timeout_ms int, max_attempts int, backoff jsonb, priority int, callback_url text, flow_key text,
              dependency_key text, metadata jsonb)
     ), w AS (
       SELECT x.*, d.max_until FROM x JOIN debounces d ON d.queue_id = x.queue_id AND d.key = x.key
     ), job AS (
       UPDATE jobs j SET method = w.method, url = w.url, headers = w.headers, body = w.body, timeout_ms = w.timeout_ms,
              max_attempts = w.max_attempts, backoff = w.backoff, priority = w.priority, callback_url = w.callback_url,
              flow_key = w.flow_key, dependency_key = w.dependency_key, metadata = w.metadata,
              due_at = least(now() + make_interval(secs => w.period_ms / 1000.0), coalesce(w.max_until, 'infinity')),
              version = j.version + 1, updated_at = now()
         FROM w WHERE j.tenant_id = $1 AND j.id = w.job_id AND j.status = 'scheduled' AND j.fencing_token = 0
        RETURNING j.*, w.queue_id AS window_queue_id, w.key AS window_key, w.creates AS window_creates
     ), counted AS (
       UPDATE debounces d SET creates = d.creates + job.window_creates, window_until = job.due_at
         FROM job WHERE d.queue_id = job.window_queue_id AND d.key = job.window_key
     )
     SELECT job.*, q.name AS queue_name FROM job JOIN queues q ON q.id = job.queue_id`,
    [tenantId, JSON.stringify(input)],
  );
  return rows;
}

export interface DebounceOpen extends DebounceKey {
  jobId: string;
  mode: "trailing" | "leading";
  periodMs: number;
  maxWaitMs: number | null;
  /** The creates the new job took (its own and those of the batch folded into it). */
  creates: number;
}

/** Opens (or reopens) windows on jobs just created for them: from now, for periodMs, at most maxWaitMs. */
export async function openDebounceWindows(db: Queryable, tenantId: string, windows: readonly DebounceOpen[]): Promise<void> {
  if (windows.length === 0) return;
  await db.query(
    `INSERT INTO debounces (queue_id, key, tenant_id, job_id, mode, started_at, window_until, max_until, creates)
     SELECT x.queue_id, x.key, $1, x.job_id, x.mode, now(), now() + make_interval(secs => x.period_ms / 1000.0),
            CASE WHEN x.max_wait_ms IS NULL THEN NULL ELSE now() + make_interval(secs => x.max_wait_ms / 1000.0) END, x.creates
       FROM jsonb_to_recordset($2::jsonb) AS x(queue_id uuid, key text, job_id uuid, mode text, period_ms float8, max_wait_ms float8, creates int)
     ON CONFLICT (queue_id, key) DO UPDATE SET job_id = EXCLUDED.job_id, mode = EXCLUDED.mode, started_at = EXCLUDED.started_at,
       window_until = EXCLUDED.window_until, max_until = EXCLUDED.max_until, creates = EXCLUDED.creates`,
    [
      tenantId,
      JSON.stringify(windows.map((w) => ({ queue_id: w.queueId, key: w.key, job_id: w.jobId, mode: w.mode, period_ms: w.periodMs, max_wait_ms: w.maxWaitMs, creates: w.creates }))),
    ],
  );
}

/** Counts leading creates that open windows answered with their jobs. */
export async function countDebouncedCreates(db: Queryable, counts: readonly (DebounceKey & { creates: number })[]): Promise<void> {
  if (counts.length === 0) return;
  await db.query(
    `UPDATE debounces d SET creates = d.creates + x.n
       FROM unnest($1::uuid[], $2::text[], $3::int[]) AS x(q, k, n) WHERE d.queue_id = x.q AND d.key = x.k`,
    [counts.map((c) => c.queueId), counts.map((c) => c.key), counts.map((c) => c.creates)],
  );
}

/** The tenant's jobs by ID (the hot table), with their queue's name. */
export async function findJobsByIds(db: Queryable, tenantId: string, ids: readonly string[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<JobRow>(
    `SELECT j.*, q.name AS queue_name FROM jobs j JOIN queues q ON q.id = j.queue_id WHERE j.tenant_id = $1 AND j.id = ANY($2::uuid[])`,
    [tenantId, ids],
  );
  return rows;
}

/**
 * Holds debounced creates' Idempotency-Keys on the jobs they folded into, so a retry of the same request gets
 * the same answer. A key taken meanwhile by a concurrent request keeps that request's job.
 */
export async function holdDebouncedIdempotencyKeys(
  db: Queryable,
  args: { tenantId: string; keys: readonly { key: string; requestHash: string; jobId: string }[]; ttlMs: number },
): Promise<void> {
  if (args.keys.length === 0) return;
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, job_id, request_hash, expires_at, debounced)
     SELECT $1, k.key, k.job_id, k.request_hash, now() + make_interval(secs => $5 / 1000.0), true
       FROM unnest($2::text[], $3::text[], $4::uuid[]) AS k(key, request_hash, job_id)
     ON CONFLICT (tenant_id, key) DO NOTHING`,
    [args.tenantId, args.keys.map((k) => k.key), args.keys.map((k) => k.requestHash), args.keys.map((k) => k.jobId), args.ttlMs],
  );
}

/** Forgets windows that closed more than `graceMs` ago (the maintenance loop), at most `limit` a call. */
export async function pruneDebounceWindows(db: Queryable, graceMs: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM debounces d WHERE (d.queue_id, d.key) IN (
       SELECT queue_id, key FROM debounces WHERE window_until < now() - make_interval(secs => $1 / 1000.0)
        AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = debounces.job_id AND j.status = 'scheduled')
        LIMIT $2)`,
    [graceMs, limit],
  );
  return rowCount ?? 0;
}
