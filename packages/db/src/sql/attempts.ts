// Worker-side hot path (S1, S5, S7, S15): start an attempt under a lease and renew it (its end is in finish.ts).
// Each is one conditional statement; a lost race is a normal result (null / false), not an error.
import type pg from "pg";
import { ATTEMPTS_ALL, JOBS_ALL } from "./lifecycle.js";
import { inTransaction } from "../in-transaction.js";
import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";
import type { Queryable } from "./types.js";
import type { CompletionResult } from "./finish.js";

export interface StartedAttempt {
  job_id: string;
  tenant_id: string;
  shard: number;
  /** Job version after the start (completion is conditional on it). */
  version: number;
  fencing_token: string;
  attempt_number: number;
  attempt_count: number;
  max_attempts: number;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
  timeout_ms: number;
  idempotency_key: string | null;
  schedule_id: string | null;
  occurrence_at: Date | null;
  backoff: { strategy: "exponential" | "fixed"; baseMs: number; maxMs: number; jitter: "full" | "none" };
  expires_at: Date | null;
  dependency_key: string | null;
  /** When the job was due (this attempt's due time: a retry's is its backoff's end). */
  due_at: Date;
  /** The job's queue's name (for the scheduling-lag metric). */
  queue: string;
  /** The job's W3C trace context: the attempt's call to the target is a child span of it. */
  traceparent: string | null;
  tracestate: string | null;
  lease_expires_at: Date;
  /** The database clock when the attempt started: the worker's time reference (never its own clock, S13). */
  db_now: Date;
}

/** A replayed attempt that may not start yet: its replay's start gate opens in `pacedForMs`. */
export interface PacedStart {
  pacedForMs: number;
}

export const isPaced = (r: StartedAttempt | PacedStart | null): r is PacedStart => r !== null && "pacedForMs" in r;

/**
 * dispatched → running, only if the job is still dispatched at the version the message carries with
 * this attempt as its current one, and the attempt has not started (S15: a cancelled or re-dispatched
 * job, or a duplicate message, matches nothing). Sets the lease in database time. The job row is locked
 * before the attempt row, the same order as cancel, so the two never deadlock.
 *
 * A job released by a DLQ replay also passes the replay's start gate (S17): its attempts start at least
 * 1/rate seconds apart, so the replay's rate holds where the work happens, not only where it is
 * released. Too early, nothing changes and the caller learns how long to wait.
 */
export async function startAttempt(
  pool: pg.Pool,
  args: { attemptId: string; jobId: string; version: number; workerId: string; leaseMs: number },
): Promise<StartedAttempt | PacedStart | null> {
  const start = JOB_STATUS_WRITES.startAttempt;
  // The common case in one statement (one round trip, atomic): a job no replay released. The job row is
  // locked first (the same order as cancel), then the attempt moves only if it is still pending, and the
  // job only if the attempt moved: both or neither.
  const fast = await pool.query<StartedAttempt>(
    `WITH locked AS (
       SELECT id FROM jobs
        WHERE id = $2 AND ${statusIn("status", start.from)} AND version = $3 AND current_attempt_id = $1 AND replay_id IS NULL
        FOR UPDATE
     ), attempt AS (
       UPDATE attempts SET status = 'running', worker_id = $4, started_at = now(), heartbeat_at = now(),
              lease_expires_at = now() + make_interval(secs => $5 / 1000.0)
        WHERE id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM locked)
        RETURNING number AS attempt_number, lease_expires_at, clock_timestamp() AS db_now
     ), job AS (
       UPDATE jobs SET status = ${stateLiteral(start.to.start)}, version = version + 1, attempt_count = attempt_count + 1, updated_at = now()
        WHERE id IN (SELECT id FROM locked) AND EXISTS (SELECT 1 FROM attempt)
        RETURNING id AS job_id, tenant_id, shard, version, fencing_token::text, attempt_count, max_attempts, method, url, headers,
                  body, timeout_ms, idempotency_key, schedule_id, occurrence_at, backoff, expires_at, dependency_key, due_at, traceparent, tracestate,
                  (SELECT q.name FROM queues q WHERE q.id = jobs.queue_id) AS queue
     )
     SELECT job.*, attempt.* FROM job, attempt`,
    [args.attemptId, args.jobId, args.version, args.workerId, args.leaseMs],
  );
  if (fast.rows[0]) return fast.rows[0];
  // A replayed job (its start gate needs the transaction), or one that cannot start (stale, cancelled, a
  // duplicate message): the general path decides.
  return inTransaction(pool, async (client) => {
    const job = await client.query<Omit<StartedAttempt, "attempt_number" | "lease_expires_at" | "db_now"> & { replay_id: string | null }>(
      `UPDATE jobs SET status = ${stateLiteral(start.to.start)}, version = version + 1, attempt_count = attempt_count + 1, updated_at = now()
        WHERE id = $2 AND ${statusIn("status", start.from)} AND version = $3 AND current_attempt_id = $1
        RETURNING id AS job_id, tenant_id, shard, version, fencing_token::text, attempt_count, max_attempts, method, url, headers,
                  body, timeout_ms, idempotency_key, schedule_id, occurrence_at, backoff, expires_at, dependency_key, due_at, traceparent, tracestate,
                  (SELECT q.name FROM queues q WHERE q.id = jobs.queue_id) AS queue, replay_id`,
      [args.attemptId, args.jobId, args.version],
    );
    if (!job.rows[0]) return null;
    const { replay_id: replayId, ...started } = job.rows[0];
    const startedAt = replayId ? await passReplayGate(client, replayId) : null;
    if (startedAt && "pacedForMs" in startedAt) throw new Paced(startedAt.pacedForMs);
    const attempt = await client.query<{ number: number; lease_expires_at: Date; db_now: Date }>(
      `UPDATE attempts SET status = 'running', worker_id = $2, started_at = coalesce($4, now()), heartbeat_at = now(),
              lease_expires_at = now() + make_interval(secs => $3 / 1000.0)
        WHERE id = $1 AND status = 'pending'
        RETURNING number, lease_expires_at, clock_timestamp() AS db_now`,
      [args.attemptId, args.workerId, args.leaseMs, startedAt?.at ?? null],
    );
    if (!attempt.rows[0]) throw new AttemptNotPending();
    return { ...started, attempt_number: attempt.rows[0].number, lease_expires_at: attempt.rows[0].lease_expires_at, db_now: attempt.rows[0].db_now };
  }).catch((err) => {
    if (err instanceof AttemptNotPending) return null; // rolled back: nothing started
    if (err instanceof Paced) return { pacedForMs: err.ms }; // rolled back: still dispatched
    throw err;
  });
}

/**
 * startAttempt's common case for many messages in one statement (the worker's starter batches the
 * messages its concurrent slots receive within a few milliseconds). Each row keeps its own conditions:
 * the job still dispatched at the row's version with the row's attempt current and no replay, the
 * attempt still pending. The job rows are locked in id order, so two batches never deadlock each other.
 * Returns the rows that started, keyed by attempt id; a row that did not start (a replayed job, a stale
 * or cancelled one, a duplicate message) is absent, and the caller takes it through startAttempt.
 */
export async function startAttempts(
  db: Queryable,
  rows: readonly { attemptId: string; jobId: string; version: number }[],
  args: { workerId: string; leaseMs: number },
): Promise<Map<string, StartedAttempt>> {
  if (rows.length === 0) return new Map();
  const start = JOB_STATUS_WRITES.startAttempt;
  const { rows: started } = await db.query<StartedAttempt & { attempt_id: string }>({
    // A named statement: parsed and planned once per connection, not per call (hot path; the text is constant).
    name: "tick_start_attempts",
    text: `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[]) AS r(attempt_id, job_id, version)
     ), locked AS (
       SELECT j.id, r.attempt_id FROM jobs j JOIN input r ON j.id = r.job_id
        WHERE ${statusIn("j.status", start.from)} AND j.version = r.version AND j.current_attempt_id = r.attempt_id AND j.replay_id IS NULL
        ORDER BY j.id
        FOR UPDATE OF j
     ), attempt AS (
       UPDATE attempts a SET status = 'running', worker_id = $4, started_at = now(), heartbeat_at = now(),
              lease_expires_at = now() + make_interval(secs => $5 / 1000.0)
         FROM locked l
        WHERE a.id = l.attempt_id AND a.status = 'pending'
        RETURNING a.id AS attempt_id, l.id AS locked_job_id, a.number AS attempt_number, a.lease_expires_at, clock_timestamp() AS db_now
     ), job AS (
       UPDATE jobs j SET status = ${stateLiteral(start.to.start)}, version = j.version + 1, attempt_count = j.attempt_count + 1, updated_at = now()
         FROM attempt a
        WHERE j.id = a.locked_job_id
        RETURNING j.id AS job_id, j.tenant_id, j.shard, j.version, j.fencing_token::text, j.attempt_count, j.max_attempts, j.method, j.url, j.headers,
                  j.body, j.timeout_ms, j.idempotency_key, j.schedule_id, j.occurrence_at, j.backoff, j.expires_at, j.dependency_key, j.due_at, j.traceparent, j.tracestate,
                  (SELECT q.name FROM queues q WHERE q.id = j.queue_id) AS queue
     )
     SELECT job.*, attempt.attempt_id, attempt.attempt_number, attempt.lease_expires_at, attempt.db_now
       FROM job JOIN attempt ON attempt.locked_job_id = job.job_id`,
    values: [rows.map((r) => r.attemptId), rows.map((r) => r.jobId), rows.map((r) => r.version), args.workerId, args.leaseMs],
  });
  return new Map(started.map(({ attempt_id: attemptId, ...row }) => [attemptId, row]));
}

/**
 * The replay's start gate: locks its pacing row and, if 1/rate has passed since the last start, takes
 * the next start instant (rounded up to the millisecond, as stored, so stored starts are never closer
 * than 1/rate). A replay that no longer exists has no gate.
 */
async function passReplayGate(client: pg.PoolClient, replayId: string): Promise<{ at: Date } | PacedStart | null> {
  const { rows } = await client.query<{ gated: boolean; started_at: Date | null; wait_ms: number | null }>(
    `WITH r AS (SELECT id, 1000.0 / rate_per_second AS spacing_ms FROM dlq_replays WHERE id = $1),
     gate AS (
       INSERT INTO dlq_replay_pacing AS p (replay_id, last_start_at)
       SELECT id, date_trunc('milliseconds', clock_timestamp()) + interval '1 millisecond' FROM r
       ON CONFLICT (replay_id) DO UPDATE SET last_start_at = date_trunc('milliseconds', clock_timestamp()) + interval '1 millisecond'
        WHERE clock_timestamp() >= p.last_start_at + make_interval(secs => (SELECT spacing_ms FROM r) / 1000.0)
       RETURNING last_start_at
     )
     SELECT EXISTS (SELECT 1 FROM r) AS gated, (SELECT last_start_at FROM gate) AS started_at,
            (SELECT ceil(extract(epoch FROM (p.last_start_at + make_interval(secs => r.spacing_ms / 1000.0) - clock_timestamp())) * 1000)::int
               FROM dlq_replay_pacing p JOIN r ON r.id = p.replay_id) AS wait_ms`,
    [replayId],
  );
  const row = rows[0]!;
  if (!row.gated) return null;
  if (row.started_at) return { at: row.started_at };
  // The wait is read from this statement's snapshot: a start committed meanwhile makes it short, and
  // the caller simply asks again.
  return { pacedForMs: Math.max(1, row.wait_ms ?? 1) };
}

class Paced extends Error {
  constructor(readonly ms: number) {
    super("paced");
  }
}

class AttemptNotPending extends Error {}

/** Why a message was not started: for the discard metric and log. */
export async function explainUnstartable(db: Queryable, attemptId: string, jobId: string, version: number): Promise<string> {
  const { rows } = await db.query<{ job_status: string | null; job_version: number | null; current: string | null; attempt_status: string | null }>(
    `SELECT j.status AS job_status, j.version AS job_version, j.current_attempt_id AS current, a.status AS attempt_status
       FROM (SELECT 1) one LEFT JOIN ${JOBS_ALL} j ON j.id = $2 LEFT JOIN ${ATTEMPTS_ALL} a ON a.id = $1`,
    [attemptId, jobId],
  );
  const r = rows[0];
  if (!r?.job_status) return "job_missing";
  if (r.job_status === "cancelled") return "cancelled";
  if (r.attempt_status && r.attempt_status !== "pending") return "duplicate"; // this attempt already started or ended
  if (r.current !== attemptId || r.job_version !== version) return "stale";
  return `job_${r.job_status}`;
}

/**
 * One heartbeat for many attempts (the worker's lease keeper renews all of its running attempts per
 * beat): each row is renewed only if it still holds its lease, as in renewAttemptLease. A row locked by
 * another statement (its own completion committing) is skipped, not waited for, so one busy row never
 * holds up the renewal of the others (nor deadlocks with a completion batch); it comes back `busy`, still
 * holding its lease as far as this statement's snapshot shows. An id in neither set has lost its lease.
 */
export async function renewAttemptLeases(db: Queryable, attemptIds: readonly string[], leaseMs: number): Promise<{ renewed: Set<string>; busy: Set<string> }> {
  if (attemptIds.length === 0) return { renewed: new Set(), busy: new Set() };
  const { rows } = await db.query<{ id: string; renewed: boolean }>(
    `WITH holding AS (
       SELECT id FROM attempts WHERE id = ANY($1::uuid[]) AND status = 'running' AND lease_expires_at > now()
     ), renewed AS (
       UPDATE attempts SET lease_expires_at = now() + make_interval(secs => $2 / 1000.0), heartbeat_at = now()
        WHERE id IN (SELECT id FROM attempts WHERE id IN (SELECT id FROM holding) ORDER BY id FOR UPDATE SKIP LOCKED)
          AND status = 'running' AND lease_expires_at > now()
        RETURNING id
     )
     SELECT id, true AS renewed FROM renewed
     UNION ALL
     SELECT id, false FROM holding WHERE id NOT IN (SELECT id FROM renewed)`,
    [attemptIds, leaseMs],
  );
  return { renewed: new Set(rows.filter((r) => r.renewed).map((r) => r.id)), busy: new Set(rows.filter((r) => !r.renewed).map((r) => r.id)) };
}

/**
 * Whether an attempt's completion already committed: after a batch whose commit outcome is unknown (the
 * connection was cut), a retried row that now loses may have won the first time. Only the worker's
 * completion moves an attempt to succeeded or failed, so that status says the completion committed; the
 * job's status and due time are read as they are now (for the caller's metric and due-index note).
 */
export async function committedCompletion(db: Queryable, attemptId: string, jobId: string): Promise<CompletionResult | null> {
  const { rows } = await db.query<{ status: string | null; due_at: Date | null }>(
    `SELECT j.status, j.due_at FROM ${ATTEMPTS_ALL} a LEFT JOIN ${JOBS_ALL} j ON j.id = $2
      WHERE a.id = $1 AND a.status IN ('succeeded', 'failed')`,
    [attemptId, jobId],
  );
  return rows[0] ? { won: true, status: rows[0].status, dueAt: rows[0].due_at } : null;
}

/**
 * dispatched → scheduled without starting (the requeue event): the dependency's breaker is open or its
 * retry budget is spent, so the attempt is discarded and the job waits `delayMs`. No attempt is burned.
 */
export async function requeueAttempt(
  db: Queryable,
  args: { attemptId: string; jobId: string; version: number; delayMs: number; reason: string },
): Promise<{ tenant_id: string; shard: number; due_at: Date } | null> {
  const requeue = JOB_STATUS_WRITES.requeueAttempt;
  const { rows } = await db.query<{ tenant_id: string; shard: number; due_at: Date }>(
    `WITH job AS (
       UPDATE jobs SET status = ${stateLiteral(requeue.to.requeue)}, version = version + 1, current_attempt_id = NULL, updated_at = now(),
              due_at = now() + make_interval(secs => $4 / 1000.0)
        WHERE id = $2 AND ${statusIn("status", requeue.from)} AND version = $3 AND current_attempt_id = $1
        RETURNING tenant_id, shard, due_at
     ), attempt AS (
       UPDATE attempts SET status = 'discarded', finished_at = now(), outcome = $5
        WHERE id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM job)
     )
     SELECT * FROM job`,
    [args.attemptId, args.jobId, args.version, args.delayMs, args.reason],
  );
  return rows[0] ?? null;
}
