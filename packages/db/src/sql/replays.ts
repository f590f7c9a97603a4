// DLQ replay (S17): choosing dead jobs, releasing them paced and fenced, and watching what becomes of
// them. The API creates a replay and its items in one transaction; the scheduler holding the tenant's
// shard releases and tallies it inside its shard-fenced transaction, like every other scheduler write.
import type { ReplayAction, ReplayState } from "@tick/core";
import { replayStatesAllowing } from "@tick/core";
import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";
import { DEAD_JOB_MATCH, deadJobMatchParams, type DeadJobMatch, type JobRow } from "./jobs.js";
import type { Queryable } from "./types.js";

export interface ReplayRow {
  id: string;
  tenant_id: string;
  shard: number;
  actor: string;
  filter: Record<string, unknown>;
  rate_per_second: number;
  status: ReplayState;
  status_reason: string | null;
  failure_threshold: number;
  failure_window: number;
  attempts: number;
  total: number;
  released: number;
  succeeded: number;
  failed: number;
  skipped: number;
  next_slot_at: Date | null;
  judged_since: Date;
  version: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

/** Which dead jobs: a DLQ filter, optionally narrowed to explicit IDs. */
export interface ReplaySelection {
  match: DeadJobMatch;
  jobIds: string[] | null;
}

/** Dead jobs matching the selection that no unsettled replay holds: parameters $1-$8, jobs j, queues q. */
const REPLAYABLE = `FROM jobs j JOIN queues q ON q.id = j.queue_id
  WHERE ${DEAD_JOB_MATCH}
    AND ($8::uuid[] IS NULL OR j.id = ANY($8::uuid[]))
    AND NOT EXISTS (SELECT 1 FROM dlq_replay_items i WHERE i.job_id = j.id AND i.outcome IS NULL)`;

const selectionParams = (tenantId: string, s: ReplaySelection) => [...deadJobMatchParams(tenantId, s.match), s.jobIds];

/** The dry run: how many dead jobs a replay would take, and the first few in release order. */
export async function previewReplay(
  db: Queryable,
  tenantId: string,
  selection: ReplaySelection,
  sampleSize: number,
): Promise<{ count: number; sample: JobRow[] }> {
  const params = selectionParams(tenantId, selection);
  const [count, sample] = await Promise.all([
    db.query<{ n: number }>(`SELECT count(*)::int AS n ${REPLAYABLE}`, params),
    db.query<JobRow>(`SELECT j.*, q.name AS queue_name ${REPLAYABLE} ORDER BY j.priority DESC, j.finished_at, j.id LIMIT $9`, [...params, sampleSize]),
  ]);
  return { count: count.rows[0]!.n, sample: sample.rows };
}

/**
 * Creates a running replay holding up to `maxJobs` of the matching dead jobs (highest priority first,
 * then oldest death), replay row and items in one statement, so no reader ever sees a replay without
 * its items. Returns null when nothing matches.
 */
export async function createReplay(
  db: Queryable,
  args: {
    tenantId: string;
    shard: number;
    actor: string;
    filter: Record<string, unknown>;
    selection: ReplaySelection;
    ratePerSecond: number;
    failureThreshold: number;
    failureWindow: number;
    attempts: number;
    maxJobs: number;
  },
): Promise<ReplayRow | null> {
  const { rows } = await db.query<ReplayRow>(
    `WITH picked AS (
       SELECT j.id, j.priority, j.finished_at ${REPLAYABLE}
        ORDER BY j.priority DESC, j.finished_at, j.id LIMIT $9
     ), replay AS (
       INSERT INTO dlq_replays (id, tenant_id, shard, actor, filter, rate_per_second, failure_threshold, failure_window, attempts, total, status)
       SELECT gen_random_uuid(), $1, $10, $11, $12, $13, $14, $15, $16, (SELECT count(*) FROM picked), 'running'
        WHERE EXISTS (SELECT 1 FROM picked)
       RETURNING *
     ), items AS (
       INSERT INTO dlq_replay_items (replay_id, job_id, priority, dead_at)
       SELECT replay.id, p.id, p.priority, p.finished_at FROM picked p, replay
     )
     SELECT * FROM replay`,
    [
      ...selectionParams(args.tenantId, args.selection),
      args.maxJobs,
      args.shard,
      args.actor,
      JSON.stringify(args.filter),
      args.ratePerSecond,
      args.failureThreshold,
      args.failureWindow,
      args.attempts,
    ],
  );
  return rows[0] ?? null;
}

/** A replay with its live item counts, as the API shows it. */
export interface ReplayWithProgress extends ReplayRow {
  /** Released, not finished yet. */
  in_flight: number;
  /** Not released yet. */
  remaining: number;
}

const WITH_PROGRESS = `SELECT r.*,
  (SELECT count(*)::int FROM dlq_replay_items i WHERE i.replay_id = r.id AND i.released_at IS NOT NULL AND i.outcome IS NULL) AS in_flight,
  (SELECT count(*)::int FROM dlq_replay_items i WHERE i.replay_id = r.id AND i.released_at IS NULL AND i.outcome IS NULL) AS remaining
  FROM dlq_replays r`;

export async function findReplay(db: Queryable, tenantId: string, id: string): Promise<ReplayWithProgress | null> {
  const { rows } = await db.query<ReplayWithProgress>(`${WITH_PROGRESS} WHERE r.tenant_id = $1 AND r.id = $2`, [tenantId, id]);
  return rows[0] ?? null;
}

export async function listReplays(db: Queryable, tenantId: string, f: { before?: { at: string; id: string }; limit: number }): Promise<ReplayWithProgress[]> {
  const { rows } = await db.query<ReplayWithProgress>(
    `${WITH_PROGRESS} WHERE r.tenant_id = $1 AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3::uuid))
      ORDER BY r.created_at DESC, r.id DESC LIMIT $4`,
    [tenantId, f.before?.at ?? null, f.before?.id ?? null, f.limit],
  );
  return rows;
}

/**
 * An operator's pause, resume or cancel, conditional on the replay being in a state the action is
 * allowed from (null: it was not). Resume judges the failure rate afresh and restarts pacing from now;
 * cancel withdraws the jobs not yet released (they stay dead) and ends the replay once nothing it
 * released is still in flight.
 */
export async function applyReplayAction(
  db: Queryable,
  tenantId: string,
  id: string,
  action: Extract<ReplayAction, "pause" | "resume" | "cancel">,
  to: ReplayState,
): Promise<ReplayRow | null> {
  const from = replayStatesAllowing(action);
  if (action !== "cancel") {
    const { rows } = await db.query<ReplayRow>(
      `UPDATE dlq_replays SET status = $4::replay_status, version = version + 1, updated_at = now(),
              status_reason = CASE WHEN $5 THEN NULL ELSE status_reason END,
              judged_since = CASE WHEN $5 THEN now() ELSE judged_since END,
              next_slot_at = CASE WHEN $5 THEN NULL ELSE next_slot_at END
        WHERE tenant_id = $1 AND id = $2 AND status = ANY($3::replay_status[])
        RETURNING *`,
      [tenantId, id, from, to, action === "resume"],
    );
    return rows[0] ?? null;
  }
  const { rows } = await db.query<ReplayRow>(
    `WITH r AS (
       SELECT id FROM dlq_replays WHERE tenant_id = $1 AND id = $2 AND status = ANY($3::replay_status[]) FOR UPDATE
     ), withdrawn AS (
       UPDATE dlq_replay_items i SET outcome = 'withdrawn', settled_at = now()
         FROM r WHERE i.replay_id = r.id AND i.released_at IS NULL AND i.outcome IS NULL
        RETURNING 1
     )
     UPDATE dlq_replays d SET status = 'cancelled', version = version + 1, updated_at = now(),
            skipped = skipped + (SELECT count(*) FROM withdrawn),
            -- Done at once unless released jobs are still in flight (the replay loop closes it when they settle).
            finished_at = CASE WHEN NOT EXISTS (SELECT 1 FROM dlq_replay_items x WHERE x.replay_id = d.id AND x.released_at IS NOT NULL AND x.outcome IS NULL)
                               THEN now() ELSE NULL END
       FROM r WHERE d.id = r.id
     RETURNING d.*`,
    [tenantId, id, from],
  );
  return rows[0] ?? null;
}

/** Which of these shards have a replay the scheduler still has work for (one look across all held shards). */
export async function shardsWithOpenReplays(db: Queryable, shards: number[]): Promise<Set<number>> {
  if (shards.length === 0) return new Set();
  const { rows } = await db.query<{ shard: number }>(`SELECT DISTINCT shard FROM dlq_replays WHERE shard = ANY($1::int[]) AND finished_at IS NULL`, [shards]);
  return new Set(rows.map((r) => r.shard));
}

/** Replays of a shard the scheduler still has work for (release, or watching released jobs). */
export async function openReplaysOfShard(db: Queryable, shard: number): Promise<ReplayRow[]> {
  const { rows } = await db.query<ReplayRow>(`SELECT * FROM dlq_replays WHERE shard = $1 AND finished_at IS NULL ORDER BY created_at`, [shard]);
  return rows;
}

/**
 * Releases the next `count` items of a running replay (highest priority, then oldest death): dead →
 * scheduled (the `replay` event; version + 1) with due times `firstSlot + k × spacing`, so they start
 * evenly paced; each gets a fresh budget of `attempts` attempts (attempt_count restarts at 0; attempt
 * numbers and fencing tokens keep rising), a new attempt ID when dispatched, and keeps its idempotency key. An item whose job is no longer dead is settled as skipped. Conditional on the
 * replay still running, so a pause or cancel committed meanwhile releases nothing.
 */
export async function releaseReplayJobs(
  db: Queryable,
  r: { id: string; tenantId: string; attempts: number },
  plan: { count: number; firstSlot: Date; spacingMs: number; nextSlot: Date },
): Promise<{ released: number; skipped: number; firstDueAt: Date | null }> {
  const release = JOB_STATUS_WRITES.releaseReplayJobs;
  const { rows } = await db.query<{ released: number; skipped: number; first_due_at: Date | null }>(
    `WITH replay AS (
       SELECT id FROM dlq_replays WHERE id = $1 AND status = 'running' FOR UPDATE
     ), picked AS (
       SELECT i.job_id, i.priority, i.dead_at FROM dlq_replay_items i, replay
        WHERE i.replay_id = replay.id AND i.released_at IS NULL AND i.outcome IS NULL
        ORDER BY i.priority DESC, i.dead_at, i.job_id LIMIT $3
        FOR UPDATE OF i SKIP LOCKED
     ), slotted AS (
       SELECT job_id, row_number() OVER (ORDER BY priority DESC, dead_at, job_id) - 1 AS k FROM picked
     ), released AS (
       UPDATE jobs j SET status = ${stateLiteral(release.to.replay)}, version = j.version + 1, updated_at = now(),
              due_at = $4::timestamptz + make_interval(secs => s.k * $5 / 1000.0),
              -- A fresh budget: the first replayed attempt is not a retry (the retry budget of the
              -- dependency's breaker is for automatic retries; the replay has its own rate).
              attempt_count = 0, max_attempts = $6, replay_id = $1, finished_at = NULL, cancel_requested_at = NULL
         FROM slotted s WHERE j.id = s.job_id AND j.tenant_id = $2 AND ${statusIn("j.status", release.from)}
        RETURNING j.id, j.fencing_token, j.due_at
     ), marked AS (
       UPDATE dlq_replay_items i SET released_at = now(), fencing_base = rl.fencing_token
         FROM released rl WHERE i.replay_id = $1 AND i.job_id = rl.id
     ), skipped AS (
       UPDATE dlq_replay_items i SET outcome = 'skipped', settled_at = now()
         FROM slotted s WHERE i.replay_id = $1 AND i.job_id = s.job_id AND NOT EXISTS (SELECT 1 FROM released rl WHERE rl.id = s.job_id)
        RETURNING 1
     ), counted AS (
       UPDATE dlq_replays SET released = released + (SELECT count(*) FROM released), skipped = skipped + (SELECT count(*) FROM skipped),
              next_slot_at = $7, updated_at = now()
        WHERE id = (SELECT id FROM replay)
     )
     SELECT (SELECT count(*) FROM released)::int AS released, (SELECT count(*) FROM skipped)::int AS skipped,
            (SELECT min(due_at) FROM released) AS first_due_at`,
    [r.id, r.tenantId, plan.count, plan.firstSlot, plan.spacingMs, r.attempts, plan.nextSlot],
  );
  const row = rows[0]!;
  return { released: row.released, skipped: row.skipped, firstDueAt: row.first_due_at };
}

export interface ReplayTally {
  succeeded: number;
  failed: number;
  skipped: number;
  /** Items neither released nor settled. */
  pending: number;
  /** Released items whose jobs have not finished yet. */
  inFlight: number;
  /** Of those, jobs not started yet (waiting for their slot, dispatch, or the start gate). */
  waiting: number;
}

/**
 * Records what became of released jobs: the first replayed attempt's outcome (judges the failure rate)
 * and the job's final status (succeeded; dead or expired count as failed; cancelled as skipped), and
 * adds them to the replay's counters. Reads only the replay's in-flight items.
 */
export async function tallyReplay(db: Queryable, replayId: string): Promise<ReplayTally> {
  await db.query(
    `WITH firsts AS (
       SELECT DISTINCT ON (i.job_id) i.job_id, a.status, a.finished_at,
              CASE WHEN a.http_status IS NOT NULL THEN 'http_status ' || a.http_status ELSE coalesce(a.error->>'kind', a.outcome) END AS error
         FROM dlq_replay_items i JOIN attempts a ON a.job_id = i.job_id AND a.fencing_token > i.fencing_base
        WHERE i.replay_id = $1 AND i.released_at IS NOT NULL AND i.outcome IS NULL AND i.first_outcome IS NULL
          AND a.status IN ('succeeded', 'failed', 'lease_expired')
        ORDER BY i.job_id, a.fencing_token
     )
     UPDATE dlq_replay_items i
        SET first_outcome = CASE WHEN f.status = 'succeeded' THEN 'succeeded' ELSE 'failed' END,
            first_outcome_at = f.finished_at,
            first_error = CASE WHEN f.status = 'succeeded' THEN NULL ELSE f.error END
       FROM firsts f WHERE i.replay_id = $1 AND i.job_id = f.job_id`,
    [replayId],
  );
  const { rows } = await db.query<ReplayTally>(
    `WITH settled AS (
       UPDATE dlq_replay_items i SET outcome = j.status::text, settled_at = now()
         FROM jobs j
        WHERE i.replay_id = $1 AND i.released_at IS NOT NULL AND i.outcome IS NULL AND j.id = i.job_id
          AND (j.status IN ('succeeded', 'dead', 'expired', 'cancelled', 'rate_limited') OR j.replay_id IS DISTINCT FROM $1)
        RETURNING i.outcome
     ), counts AS (
       SELECT count(*) FILTER (WHERE outcome = 'succeeded')::int AS succeeded,
              count(*) FILTER (WHERE outcome IN ('dead', 'expired'))::int AS failed,
              count(*) FILTER (WHERE outcome NOT IN ('succeeded', 'dead', 'expired'))::int AS skipped
         FROM settled
     ), counted AS (
       UPDATE dlq_replays d SET succeeded = d.succeeded + c.succeeded, failed = d.failed + c.failed, skipped = d.skipped + c.skipped,
              updated_at = CASE WHEN c.succeeded + c.failed + c.skipped > 0 THEN now() ELSE d.updated_at END
         FROM counts c WHERE d.id = $1
     )
     SELECT c.succeeded, c.failed, c.skipped,
            (SELECT count(*)::int FROM dlq_replay_items WHERE replay_id = $1 AND released_at IS NULL AND outcome IS NULL) AS pending,
            (SELECT count(*)::int FROM dlq_replay_items WHERE replay_id = $1 AND released_at IS NOT NULL AND outcome IS NULL) - (SELECT count(*)::int FROM settled) AS "inFlight",
            (SELECT count(*)::int FROM dlq_replay_items i JOIN jobs j ON j.id = i.job_id
              WHERE i.replay_id = $1 AND i.released_at IS NOT NULL AND i.outcome IS NULL AND j.status IN ('scheduled', 'dispatched')) AS waiting
       FROM counts c`,
    [replayId],
  );
  return rows[0]!;
}

/** First outcomes of replayed jobs since `since`, newest first: the failure-rate window. */
export async function recentFirstOutcomes(db: Queryable, replayId: string, since: Date, limit: number): Promise<{ outcome: "succeeded" | "failed"; error: string | null }[]> {
  const { rows } = await db.query<{ outcome: "succeeded" | "failed"; error: string | null }>(
    `SELECT first_outcome AS outcome, first_error AS error FROM dlq_replay_items
      WHERE replay_id = $1 AND first_outcome_at IS NOT NULL AND first_outcome_at >= $2
      ORDER BY first_outcome_at DESC LIMIT $3`,
    [replayId, since, limit],
  );
  return rows;
}

/**
 * The scheduler's verdicts: running → auto_paused (with why), or running, paused or auto_paused → completed
 * (nothing left to release or in flight). False if the replay is no longer in a state that allows it.
 */
export async function concludeReplay(db: Queryable, id: string, to: "auto_paused" | "completed", reason: string | null): Promise<boolean> {
  const from = replayStatesAllowing(to === "completed" ? "complete" : "autoPause");
  const { rowCount } = await db.query(
    `UPDATE dlq_replays SET status = $2::replay_status, status_reason = $3, version = version + 1, updated_at = now(),
            finished_at = CASE WHEN $2 = 'completed' THEN now() ELSE finished_at END
      WHERE id = $1 AND status = ANY($4::replay_status[])`,
    [id, to, reason, from],
  );
  return (rowCount ?? 0) > 0;
}

/** A cancelled replay whose released jobs have all settled: nothing left to watch. */
export async function closeCancelledReplay(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE dlq_replays SET finished_at = now(), updated_at = now() WHERE id = $1 AND status = 'cancelled' AND finished_at IS NULL`, [id]);
}



/**
 * Dependencies among `open` (circuit breakers open now) that the replay's in-flight jobs or its next
 * `lookahead` jobs to release call: replaying into them would only wait behind the breaker or fail.
 */
export async function replayDependenciesAmong(db: Queryable, replayId: string, open: string[], lookahead: number): Promise<string[]> {
  if (open.length === 0) return [];
  const { rows } = await db.query<{ dependency_key: string }>(
    `SELECT DISTINCT j.dependency_key FROM (
       (SELECT job_id FROM dlq_replay_items WHERE replay_id = $1 AND released_at IS NOT NULL AND outcome IS NULL)
       UNION ALL
       (SELECT job_id FROM dlq_replay_items WHERE replay_id = $1 AND released_at IS NULL AND outcome IS NULL
         ORDER BY priority DESC, dead_at, job_id LIMIT $3)
     ) i JOIN jobs j ON j.id = i.job_id
     WHERE j.dependency_key = ANY($2::text[])`,
    [replayId, open, lookahead],
  );
  return rows.map((r) => r.dependency_key);
}
