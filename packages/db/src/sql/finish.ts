// Every way a job ends. A job reaches a terminal state (succeeded, dead, cancelled, expired) only through a
// statement in this file, composed by `endingStatement`, which writes in the same statement what must follow
// every end: the completion webhooks (a delivery per destination and its outbox row). Anything new that must
// happen when a job ends (releasing a per-key slot, releasing the jobs waiting for it, a rollup) goes into
// `afterJobsEnd` once and then holds for every end. The architecture test (tooling/architecture) fails on a
// terminal jobs.status write outside this file, or on one here that does not go through endingStatement.
//
// The ends: an attempt completed by its worker (completeAttempts), an attempt whose lease ran out, settled by
// the reaper (settleExpiredLeases), a job past its deadline before it started (expireOverdueJobs), a job
// cancelled before it started (cancelJobBeforeStart), and a job dropped by its flow key's rate
// (dropRateLimitedJobs). A running job's cancel is recorded (requestCancelOfRunningJob)
// and takes effect through its attempt's end.
import { TERMINAL_STATES, type AttemptOutcome, type JobEvent, type JobState } from "@tick/core";
import { bucketTokens, CLAIM_TIME, KEY_RATE_LIMIT, KEY_RATE_PERIOD_MS } from "./flow-keys.js";
import { DECISION_EVENT, JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";
import type { JobRow } from "./jobs.js";
import type { ExpiredLease } from "./reaper.js";
import type { Queryable } from "./types.js";
import { EVENT_FOR_STATUS } from "./webhooks.js";

for (const state of TERMINAL_STATES) if (!EVENT_FOR_STATUS[state]) throw new Error(`the terminal job state ${state} has no completion webhook event`);

/**
 * A statement that may end jobs. `moves` are its CTEs; the last one is named `ended` and returns the moved job
 * rows with at least ENDED_COLUMNS (a moved row that is not terminal, such as a retry, is passed over by what
 * follows). `select` is the statement's final query.
 */
function endingStatement(moves: string, select: string): string {
  return `WITH ${moves}, ${afterJobsEnd("SELECT * FROM ended")}
     ${select}`;
}

/** The columns of a moved job row that what follows an end reads, for a RETURNING list (`alias.` prefixed). */
function endedColumns(alias: string): string {
  return ["id", "tenant_id", "queue_id", "status", "due_at", "idempotency_key", "attempt_count", "result", "last_error", "metadata", "schedule_id", "finished_at", "callback_url", "traceparent", "tracestate", "current_attempt_id"]
    .map((c) => `${alias}.${c}`)
    .join(", ");
}

/**
 * What follows the end of the jobs `source` yields that are terminal, as CTEs of the ending statement: the
 * completion webhooks, a delivery per destination (the job's callback URL and each enabled endpoint of the
 * tenant subscribed to the event) and its outbox row. Idempotent per (job, event, url). Uses no parameters.
 */
function afterJobsEnd(source: string): string {
  const event = TERMINAL_STATES.map((state) => `WHEN ${stateLiteral(state)} THEN '${EVENT_FOR_STATUS[state]}'`).join(" ");
  // Each CTE reads the one before it and nothing joins back: `destinations` carries every column the
  // delivery needs, and the outbox row takes the shard from the job by its key. Joining the deliveries back
  // to `finished` makes the planner (which sees one row in a CTE) re-run the endpoint lookup of every
  // finished job once per finished job: 2,500 index probes, 14 ms, for a batch of 50 completions.
  return `finished AS (
       SELECT j.id, j.tenant_id, j.queue_id, j.status, j.idempotency_key, j.attempt_count, j.result, j.last_error, j.metadata,
              j.schedule_id, j.finished_at, j.callback_url, j.traceparent, j.tracestate,
              CASE j.status ${event} END AS event
         FROM (${source}) j WHERE ${statusIn("j.status", TERMINAL_STATES)}
     ), destinations AS (
       SELECT f.*, f.callback_url AS url, NULL::uuid AS endpoint_id FROM finished f
        WHERE f.callback_url IS NOT NULL
       UNION ALL
       SELECT f.*, e.url, e.id FROM finished f
         JOIN webhook_endpoints e ON e.tenant_id = f.tenant_id AND e.enabled AND f.event = ANY(e.events)
     ), deliveries AS (
       INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, job_id, event, url, traceparent, tracestate, payload)
       SELECT gen_random_uuid(), d.tenant_id, d.endpoint_id, d.id, d.event, d.url, d.traceparent, d.tracestate,
              jsonb_build_object(
                'type', d.event,
                'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'data', jsonb_build_object(
                  'jobId', d.id, 'status', d.status, 'queueId', d.queue_id, 'idempotencyKey', d.idempotency_key,
                  'attemptCount', d.attempt_count, 'result', d.result, 'lastError', d.last_error,
                  'metadata', d.metadata, 'scheduleId', d.schedule_id, 'finishedAt', d.finished_at))
         FROM destinations d
       ON CONFLICT (job_id, event, url) DO NOTHING
       RETURNING id, tenant_id, job_id
     ), webhook_outbox AS (
       INSERT INTO outbox (kind, shard, tenant_id, job_id, payload)
       SELECT 'webhook', j.shard, d.tenant_id, d.job_id, jsonb_build_object('deliveryId', d.id, 'try', 1)
         FROM deliveries d JOIN jobs j ON j.id = d.job_id
       RETURNING 1
     )`;
}

// ---- An attempt ended: the worker's completion and the reaper's settlement ----


/** What an attempt's end does to its job (core's decideAttemptOutcome). */
export type AttemptDecision = AttemptOutcome;

const complete = JOB_STATUS_WRITES.completeAttempt;
const settle = JOB_STATUS_WRITES.settleExpiredLease;
type AttemptEndWrite = typeof complete | typeof settle;

/** The state a success leads to, for the write that records successes (the worker's completion); none for the reaper's. */
const succeedOf = (write: AttemptEndWrite): JobState | undefined => (write.to as Readonly<Partial<Record<JobEvent, JobState>>>).succeed;

/**
 * The job's status after its running attempt ended: the decision's state (`target`, an SQL expression holding
 * `write.to` of the decision's event), except that a job whose cancel was recorded while the attempt ran ends
 * cancelled unless the attempt succeeded (core's decideAttemptOutcome states the rule; the statement applies
 * it to a cancel recorded after its caller read the job, which the worker never does).
 */
function statusAfterAttempt(write: AttemptEndWrite, target: string): string {
  const succeed = succeedOf(write);
  const unsuccessful = succeed ? ` AND ${target} <> ${stateLiteral(succeed)}` : "";
  return `CASE WHEN j.cancel_requested_at IS NOT NULL${unsuccessful} THEN ${stateLiteral(write.to.abandon)}::job_status ELSE ${target}::job_status END`;
}

/**
 * The rest of the job row after its running attempt ended (after `status = statusAfterAttempt(...)`): a new
 * version, no current attempt, a retry's due time and no finish time, the error of a failure, the result of a
 * success. `dueInMs`, `error` and `result` are SQL expressions.
 */
function columnsAfterAttempt(write: AttemptEndWrite, target: string, v: { dueInMs: string; error: string; result?: string }): string {
  const retry = stateLiteral(write.to.retry);
  const succeed = succeedOf(write);
  const columns = [
    "version = j.version + 1",
    "updated_at = now()",
    "current_attempt_id = NULL",
    `due_at = CASE WHEN ${target} = ${retry} THEN now() + make_interval(secs => ${v.dueInMs} / 1000.0) ELSE j.due_at END`,
    `finished_at = CASE WHEN ${target} = ${retry} AND j.cancel_requested_at IS NULL THEN NULL ELSE now() END`,
    succeed ? `last_error = CASE WHEN ${target} = ${stateLiteral(succeed)} THEN j.last_error ELSE ${v.error} END` : `last_error = ${v.error}`,
  ];
  if (succeed && v.result) columns.push(`result = CASE WHEN ${target} = ${stateLiteral(succeed)} THEN ${v.result} ELSE j.result END`);
  return columns.join(",\n              ");
}

export interface CompleteAttemptArgs {
  attemptId: string;
  jobId: string;
  /** Job version after start, and the attempt's fencing token: the completion is fenced on both (S7). */
  version: number;
  fencingToken: string;
  outcome: string;
  decision: AttemptDecision;
  httpStatus: number | null;
  error: unknown;
  result: unknown;
  durationMs: number;
}

export interface CompletionResult {
  won: boolean;
  status: string | null;
  dueAt: Date | null;
}

const COMPLETE_ATTEMPTS = endingStatement(
  `input AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::bigint[], $5::text[], $6::float8[], $7::text[],
                            $8::jsonb[], $9::jsonb[], $10::int[], $11::int[])
         AS r(attempt_id, job_id, version, fencing_token, target, due_in_ms, outcome, error, result, http_status, duration_ms)
     ), ended AS (
       UPDATE jobs j SET status = ${statusAfterAttempt(complete, "r.target")},
              ${columnsAfterAttempt(complete, "r.target", { dueInMs: "r.due_in_ms", error: "r.error", result: "r.result" })}
         FROM input r
        WHERE j.id = r.job_id AND ${statusIn("j.status", complete.from)} AND j.version = r.version AND j.current_attempt_id = r.attempt_id
          AND j.fencing_token = r.fencing_token
        RETURNING ${endedColumns("j")}, r.attempt_id
     ), attempt AS (
       UPDATE attempts a SET status = CASE WHEN r.target = ${stateLiteral(complete.to.succeed)} THEN 'succeeded'::attempt_status ELSE 'failed'::attempt_status END,
              finished_at = now(), outcome = r.outcome, http_status = r.http_status, error = r.error, duration_ms = r.duration_ms
         FROM input r
        WHERE a.id = r.attempt_id AND a.status = 'running' AND r.attempt_id IN (SELECT attempt_id FROM ended)
     ), late AS (
       UPDATE attempts a SET late_completions = a.late_completions + 1
         FROM input r
        WHERE a.id = r.attempt_id AND r.attempt_id NOT IN (SELECT attempt_id FROM ended)
     )`,
  `SELECT attempt_id, due_at, status FROM ended`,
);

/**
 * Records the end of attempts and moves their jobs on, in one statement (the worker's completer batches what
 * its concurrent attempts finish within a few milliseconds; a single completion is a batch of one). Every row
 * keeps its own fence: the job still running that attempt at that version and fencing token. A row that lost
 * (its lease was taken over meanwhile) is refused and counted on its attempt as a late completion (a
 * duplicate signal), and comes back `won: false`. One result per input row, in input order.
 */
export async function completeAttempts(db: Queryable, completions: readonly CompleteAttemptArgs[]): Promise<CompletionResult[]> {
  if (completions.length === 0) return [];
  const params = completions.map(completeParams);
  const { rows } = await db.query<{ attempt_id: string; due_at: Date; status: string }>({
    // A named statement: parsed and planned once per connection and plan period (createPool's PLAN_MAX_AGE_MS),
    // not per call: parsing and planning it cost about as much as running it (40 µs a job in 50-job batches).
    name: "tick_complete_attempts",
    text: COMPLETE_ATTEMPTS,
    values: params[0]!.map((_, i) => params.map((p) => p[i])),
  });
  const won = new Map(rows.map((r) => [r.attempt_id, r]));
  return completions.map((c) => {
    const row = won.get(c.attemptId);
    return { won: row !== undefined, status: row?.status ?? null, dueAt: row?.due_at ?? null };
  });
}

function completeParams(a: CompleteAttemptArgs): unknown[] {
  return [
    a.attemptId,
    a.jobId,
    a.version,
    a.fencingToken,
    complete.to[DECISION_EVENT[a.decision.kind]],
    a.decision.kind === "retry" ? a.decision.dueInMs : 0,
    a.outcome,
    a.error === null || a.error === undefined ? null : JSON.stringify(a.error),
    a.result === null || a.result === undefined ? null : JSON.stringify(a.result),
    a.httpStatus,
    a.durationMs,
  ];
}

/** One lost attempt and what the reaper decided for its job (never a success: nothing reported one). */
export interface LeaseSettlement {
  lease: ExpiredLease;
  decision: Exclude<AttemptDecision, { kind: "succeeded" }>;
}

/**
 * Settles a batch of lost attempts in one statement (River's rescuer: decide in code, write once): each job
 * moves on as decided and its attempt is marked lost, each row on its own conditions: the job still at the
 * version the reaper read, this attempt still its current one, running, and its lease still ended more than
 * `marginMs` ago. Returns the job IDs that were settled; a row that lost a race is left as is.
 */
export async function settleExpiredLeases(db: Queryable, settlements: LeaseSettlement[], marginMs: number): Promise<Set<string>> {
  if (settlements.length === 0) return new Set();
  const error = { kind: "lease_expired", message: "the worker stopped renewing its lease; the attempt is presumed lost (its effect may have happened)" };
  const { rows } = await db.query<{ id: string }>(
    endingStatement(
      `decided AS (
       SELECT d.* FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::job_status[], $5::float8[]) AS d(attempt_id, job_id, version, target, due_in_ms)
         -- Only attempts still running whose lease still ended (the status of an attempt, not of a job).
         JOIN attempts a ON a.id = d.attempt_id AND a.status = 'running' AND a.lease_expires_at < now() - make_interval(secs => $7 / 1000.0)
     ), ended AS (
       UPDATE jobs j SET status = ${statusAfterAttempt(settle, "d.target")},
              ${columnsAfterAttempt(settle, "d.target", { dueInMs: "d.due_in_ms", error: "$6" })}
         FROM decided d
        WHERE j.id = d.job_id AND j.version = d.version AND ${statusIn("j.status", settle.from)} AND j.current_attempt_id = d.attempt_id
        RETURNING ${endedColumns("j")}, d.attempt_id
     ), lost AS (
       UPDATE attempts a SET status = 'lease_expired', finished_at = now(), outcome = 'lease_expired', error = $6
         FROM ended s WHERE a.id = s.attempt_id
     )`,
      `SELECT id FROM ended`,
    ),
    [
      settlements.map((s) => s.lease.attempt_id),
      settlements.map((s) => s.lease.job_id),
      settlements.map((s) => s.lease.job_version),
      settlements.map((s) => settle.to[DECISION_EVENT[s.decision.kind]]),
      settlements.map((s) => (s.decision.kind === "retry" ? s.decision.dueInMs : 0)),
      error,
      marginMs,
    ],
  );
  return new Set(rows.map((r) => r.id));
}

// ---- A job ended before it started: expired or cancelled ----

/** Discards the unstarted attempt (pending, dispatched to a worker) of each job `ended` returns; its outcome is the job's end. */
function discardUnstartedAttempts(end: JobState): string {
  return `discarded AS (
       UPDATE attempts a SET status = 'discarded', finished_at = now(), outcome = ${stateLiteral(end)}
         FROM ended e WHERE a.id = e.current_attempt_id AND a.status = 'pending'
     )`;
}

/**
 * Jobs of a shard past their expiry deadline that never started: scheduled|dispatched → expired
 * (version + 1), discarding an unstarted attempt. Bounded per call.
 */
export async function expireOverdueJobs(db: Queryable, shard: number, limit: number): Promise<{ id: string; tenant_id: string }[]> {
  const expire = JOB_STATUS_WRITES.expireOverdueJobs;
  const overdue = `shard = $1 AND expires_at IS NOT NULL AND expires_at <= now() AND ${statusIn("status", expire.from)}`;
  // The reaper sweeps every shard it has work on, and almost never finds a job past its deadline; planning the
  // ending statement costs several milliseconds every time, so a probe on the expiry index asks first.
  const {
    rows: [probe],
  } = await db.query<{ due: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM jobs WHERE ${overdue}) AS due`,
    [shard],
  );
  if (!probe?.due) return [];
  const { rows } = await db.query<{ id: string; tenant_id: string }>(
    endingStatement(
      `due AS (
       SELECT id FROM jobs WHERE ${overdue}
        ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ), ended AS (
       UPDATE jobs j SET status = ${stateLiteral(expire.to.expire)}, version = j.version + 1, finished_at = now(), updated_at = now(),
              last_error = jsonb_build_object('kind', 'expired', 'message', 'the job passed its expiry deadline before it could start')
         FROM due WHERE j.id = due.id
        RETURNING ${endedColumns("j")}
     ), ${discardUnstartedAttempts(expire.to.expire)}`,
      `SELECT id, tenant_id FROM ended`,
    ),
    [shard, limit],
  );
  return rows;
}

/**
 * scheduled|dispatched → cancelled (version + 1), discarding a dispatched attempt that has not started.
 * The worker's pre-execution check sees the new version and drops the message (S15). Null: the job was
 * not cancellable at that instant (running, finished or absent).
 */
export async function cancelJobBeforeStart(db: Queryable, tenantId: string, jobId: string): Promise<JobRow | null> {
  const cancel = JOB_STATUS_WRITES.cancelJobBeforeStart;
  const { rows } = await db.query<JobRow>(
    endingStatement(
      `ended AS (
       UPDATE jobs j SET status = ${stateLiteral(cancel.to.cancel)}, version = j.version + 1, finished_at = now(), updated_at = now()
        WHERE j.tenant_id = $1 AND j.id = $2 AND ${statusIn("j.status", cancel.from)}
        RETURNING j.*
     ), ${discardUnstartedAttempts(cancel.to.cancel)}`,
      `SELECT c.*, (SELECT q.name FROM queues q WHERE q.id = c.queue_id) AS queue_name FROM ended c`,
    ),
    [tenantId, jobId],
  );
  return rows[0] ?? null;
}

// ---- A job dropped by its flow key's rate ----

/**
 * The due jobs of a tenant's queues that drop (perKeyRateMode "drop") whose flow key has no whole token left
 * (its bucket, spent by the claim that ran just before in the same transaction, read at the claim's time basis,
 * CLAIM_TIME, so the claim's spend is not refilled backwards): scheduled → rate_limited
 * (version + 1), with the completion webhooks. A paused key's jobs are held, not dropped; a key with tokens
 * left keeps its jobs for the next claim. Bounded per call. Reads only keys with a bucket.
 */
export async function dropRateLimitedJobs(db: Queryable, shard: number, tenantId: string, limit: number): Promise<{ id: string; queue_id: string; flow_key: string }[]> {
  const drop = JOB_STATUS_WRITES.dropRateLimitedJobs;
  const { rows } = await db.query<{ id: string; queue_id: string; flow_key: string }>(
    endingStatement(
      `empty AS (
       SELECT b.queue_id, b.key FROM flow_key_buckets b
         JOIN queues q ON q.id = b.queue_id AND q.tenant_id = $2 AND q.per_key_rate_mode = 'drop' AND NOT q.paused
         LEFT JOIN flow_keys fk ON fk.queue_id = b.queue_id AND fk.key = b.key
        WHERE NOT coalesce(fk.paused, false)
          AND ${KEY_RATE_LIMIT} IS NOT NULL
          AND ${bucketTokens("b", KEY_RATE_LIMIT, `nullif(${KEY_RATE_PERIOD_MS}, 0)`, CLAIM_TIME)} < 1
     ), due AS (
       SELECT j.id FROM empty e CROSS JOIN LATERAL (
         SELECT j.id FROM jobs j
          WHERE j.queue_id = e.queue_id AND j.flow_key = e.key AND j.flow_key IS NOT NULL AND ${statusIn("j.status", drop.from)}
            AND j.due_at <= ${CLAIM_TIME} AND j.shard = $1 AND j.tenant_id = $2
          LIMIT $3
       ) j
       LIMIT $3
     ), locked AS (
       SELECT j.id FROM jobs j JOIN due d ON d.id = j.id WHERE ${statusIn("j.status", drop.from)} FOR UPDATE OF j SKIP LOCKED
     ), ended AS (
       UPDATE jobs j SET status = ${stateLiteral(drop.to.rate_limit)}, version = j.version + 1, finished_at = now(), updated_at = now(),
              last_error = jsonb_build_object('kind', 'rate_limited', 'message', 'its flow key was over its rate and its queue drops what is over')
         FROM locked l WHERE j.id = l.id AND ${statusIn("j.status", drop.from)}
        RETURNING ${endedColumns("j")}, j.flow_key
     )`,
      `SELECT id, queue_id, flow_key FROM ended`,
    ),
    [shard, tenantId, limit],
  );
  return rows;
}
