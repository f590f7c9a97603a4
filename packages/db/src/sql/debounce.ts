// Debounce windows (docs/api.md "Debounce"): creates of a queue with the same debounce key fold into one job.
// A window is a debounces row, read and changed under a transaction-scoped advisory lock of its (queue, key),
// so concurrent creates of one key take turns; the job a trailing window folds into is locked too, and only a
// job still scheduled is changed (the claim skips a locked job; a job already dispatched is never changed).
import type { JobTemplateColumns } from "./job-template.js";
import type { JobRow } from "./jobs.js";
import type { Queryable } from "./types.js";

export interface DebounceWindow {
  job_id: string;
  mode: "trailing" | "leading";
  started_at: Date;
  window_until: Date;
  max_until: Date | null;
  creates: number;
  /** The window's job is scheduled (locked by this transaction): a trailing create may fold into it. */
  job_scheduled: boolean;
  /** now() is before window_until (a leading window is open). */
  open: boolean;
  /** now() is before max_until, or there is none. */
  before_max: boolean;
}

/**
 * Takes the (queue, key) debounce lock for the rest of the transaction and reads its window, if any, locking
 * the window's job when it is still scheduled.
 */
export async function lockDebounceWindow(db: Queryable, queueId: string, key: string): Promise<DebounceWindow | null> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1::text || $2, 7411))`, [queueId, key]);
  const { rows } = await db.query<DebounceWindow>(
    `SELECT d.job_id, d.mode, d.started_at, d.window_until, d.max_until, d.creates,
            EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status = 'scheduled' FOR UPDATE) AS job_scheduled,
            now() < d.window_until AS open,
            (d.max_until IS NULL OR now() < d.max_until) AS before_max
       FROM debounces d WHERE d.queue_id = $1 AND d.key = $2`,
    [queueId, key],
  );
  return rows[0] ?? null;
}

/**
 * A trailing create folds into its window's job (locked and scheduled: lockDebounceWindow): the job takes the
 * create's template (its payload) and is due `periodMs` from now, never past the window's max_until; the
 * window counts the create. Null when the job is no longer scheduled.
 */
export async function foldIntoDebouncedJob(
  db: Queryable,
  args: { tenantId: string; queueId: string; key: string; jobId: string; columns: JobTemplateColumns; periodMs: number; creates?: number },
): Promise<JobRow | null> {
  const c = args.columns;
  const { rows } = await db.query<JobRow>(
    `WITH w AS (
       SELECT max_until FROM debounces WHERE queue_id = $2 AND key = $3
     ), job AS (
       UPDATE jobs j SET method = $5, url = $6, headers = $7::jsonb, body = $8, timeout_ms = $9, max_attempts = $10, backoff = $11::jsonb,
              priority = $12, callback_url = $13, flow_key = $14, dependency_key = $15, metadata = $16::jsonb,
              due_at = least(now() + make_interval(secs => $17 / 1000.0), coalesce((SELECT max_until FROM w), 'infinity')),
              version = j.version + 1, updated_at = now()
        WHERE j.tenant_id = $1 AND j.id = $4 AND j.status = 'scheduled'
        RETURNING j.*
     ), counted AS (
       UPDATE debounces d SET creates = d.creates + $18, window_until = job.due_at FROM job WHERE d.queue_id = $2 AND d.key = $3
     )
     SELECT job.*, q.name AS queue_name FROM job JOIN queues q ON q.id = job.queue_id`,
    [
      args.tenantId,
      args.queueId,
      args.key,
      args.jobId,
      c.method,
      c.url,
      JSON.stringify(c.headers),
      c.body,
      c.timeout_ms,
      c.max_attempts,
      JSON.stringify(c.backoff),
      c.priority,
      c.callback_url,
      c.flow_key,
      c.dependency_key,
      JSON.stringify(c.metadata),
      args.periodMs,
      args.creates ?? 1,
    ],
  );
  return rows[0] ?? null;
}

/** Opens (or reopens) the (queue, key) window on a job just created for it: from now, for periodMs, at most maxWaitMs. */
export async function openDebounceWindow(
  db: Queryable,
  args: { tenantId: string; queueId: string; key: string; jobId: string; mode: "trailing" | "leading"; periodMs: number; maxWaitMs: number | null },
): Promise<void> {
  await db.query(
    `INSERT INTO debounces (queue_id, key, tenant_id, job_id, mode, started_at, window_until, max_until, creates)
     VALUES ($1, $2, $3, $4, $5, now(), now() + make_interval(secs => $6 / 1000.0),
             CASE WHEN $7::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $7 / 1000.0) END, 1)
     ON CONFLICT (queue_id, key) DO UPDATE SET job_id = EXCLUDED.job_id, mode = EXCLUDED.mode, started_at = EXCLUDED.started_at,
       window_until = EXCLUDED.window_until, max_until = EXCLUDED.max_until, creates = 1`,
    [args.queueId, args.key, args.tenantId, args.jobId, args.mode, args.periodMs, args.maxWaitMs],
  );
}

/** Counts leading creates that the open window answered with the window's job. */
export async function countDebouncedCreate(db: Queryable, queueId: string, key: string, creates: number): Promise<void> {
  await db.query(`UPDATE debounces SET creates = creates + $3 WHERE queue_id = $1 AND key = $2`, [queueId, key, creates]);
}

/**
 * Holds debounced creates' Idempotency-Keys on the job they folded into, so a retry of the same request gets
 * the same answer. A key taken meanwhile by a concurrent request keeps that request's job.
 */
export async function holdDebouncedIdempotencyKeys(
  db: Queryable,
  args: { tenantId: string; jobId: string; keys: { key: string; requestHash: string }[]; ttlMs: number },
): Promise<void> {
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, job_id, request_hash, expires_at, debounced)
     SELECT $1, k.key, $2, k.request_hash, now() + make_interval(secs => $5 / 1000.0), true
       FROM unnest($3::text[], $4::text[]) AS k(key, request_hash)
     ON CONFLICT (tenant_id, key) DO NOTHING`,
    [args.tenantId, args.jobId, args.keys.map((k) => k.key), args.keys.map((k) => k.requestHash), args.ttlMs],
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
