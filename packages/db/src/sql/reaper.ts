// Reaper (S1, S5, S10): finds attempts that will never finish on their own. Run inside a transaction
// fenced by the shard lease, like every scheduler write.
import { probeShards, type ProbeResult, type ShardProbe } from "./shard-leases.js";
import type { Queryable } from "./types.js";

export interface ExpiredLease {
  attempt_id: string;
  job_id: string;
  tenant_id: string;
  job_version: number;
  attempt_count: number;
  max_attempts: number;
  backoff: { strategy: "exponential" | "fixed"; baseMs: number; maxMs: number; jitter: "full" | "none" };
  expires_at: Date | null;
  cancel_requested_at: Date | null;
  /** The job's flow key: settling the attempt frees the key's slot (the trigger flow_key_in_flight). */
  flow_key: string | null;
  db_now: Date;
}

/**
 * Running attempts whose lease ended more than `marginMs` ago by the database clock. The margin
 * absorbs a heartbeat that is merely late (S13): the worker may still be alive (S7), which is why the
 * job's next attempt gets a higher fencing token and the old one's completion will be refused.
 * Found from the job side, as every reaper read is: the shard's running jobs (jobs_live_idx) and their
 * current attempts. Attempts have no index on status (so their updates stay HOT).
 */
export async function lockExpiredLeases(db: Queryable, shard: number, marginMs: number, limit: number): Promise<ExpiredLease[]> {
  const { rows } = await db.query<ExpiredLease>(
    `SELECT a.id AS attempt_id, j.id AS job_id, j.tenant_id, j.version AS job_version, j.attempt_count, j.max_attempts,
            j.backoff, j.expires_at, j.cancel_requested_at, j.flow_key, now() AS db_now
       FROM jobs j JOIN attempts a ON a.id = j.current_attempt_id
      WHERE j.shard = $1 AND j.status = 'running'
        AND a.status = 'running' AND a.lease_expires_at < now() - make_interval(secs => $2 / 1000.0)
      ORDER BY a.lease_expires_at
      LIMIT $3
      FOR UPDATE OF a, j SKIP LOCKED`,
    [shard, marginMs, limit],
  );
  return rows;
}

/**
 * Dispatched attempts of a shard that no worker has started `olderThanMs` after their (re)publication,
 * oldest first: the reaper asks the broker whether their message can still reach a worker. Read without
 * locks; the re-publish checks every condition again.
 */
export async function findUnstartedAttempts(
  db: Queryable,
  shard: number,
  olderThanMs: number,
  limit: number,
): Promise<{ id: string; message_id: string | null }[]> {
  const { rows } = await db.query<{ id: string; message_id: string | null }>(
    `SELECT a.id, a.message_id FROM jobs j JOIN attempts a ON a.id = j.current_attempt_id
      WHERE j.shard = $1 AND j.status = 'dispatched'
        AND a.status = 'pending' AND a.dispatched_at < now() - make_interval(secs => $2 / 1000.0)
        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.attempt_id = a.id AND o.published_at IS NULL)
      ORDER BY a.dispatched_at LIMIT $3`,
    [shard, olderThanMs, limit],
  );
  return rows;
}

/**
 * Re-publishes, through a new outbox row for the SAME attempt ID, dispatched attempts nobody started:
 * those whose message the broker can no longer deliver (`undeliverable`: consumed without a start, or
 * lost), and as a last resort every one not started within `timeoutMs` of its (re)publication. The relay
 * picks the message ID (a still-deliverable message makes the copy a no-op, S5). Each row is re-checked:
 * still pending, still the job's current attempt, nothing unpublished for it.
 */
export async function republishStrandedAttempts(db: Queryable, shard: number, timeoutMs: number, limit: number, undeliverable: string[] = []): Promise<number> {
  const { rowCount } = await db.query(
    `WITH stranded AS (
       SELECT a.id, a.job_id, a.tenant_id, a.job_version, a.fencing_token, a.shard_epoch, j.dependency_key, j.attempt_count
         FROM jobs j JOIN attempts a ON a.id = j.current_attempt_id
        WHERE j.shard = $1 AND j.status = 'dispatched'
          AND a.status = 'pending' AND (a.dispatched_at < now() - make_interval(secs => $2 / 1000.0) OR a.id = ANY($4::uuid[]))
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.attempt_id = a.id AND o.published_at IS NULL)
        ORDER BY a.dispatched_at LIMIT $3
        FOR UPDATE OF a SKIP LOCKED
     ), touched AS (
       UPDATE attempts a SET dispatched_at = now() FROM stranded s WHERE a.id = s.id
     )
     INSERT INTO outbox (kind, shard, tenant_id, job_id, attempt_id, payload)
     SELECT 'dispatch', $1, tenant_id, job_id, id,
            jsonb_build_object('jobId', job_id, 'attemptId', id, 'tenantId', tenant_id, 'version', job_version,
                               'fencingToken', fencing_token::text, 'shard', $1::int, 'epoch', shard_epoch::text, 'republished', true,
                               'dependency', dependency_key, 'attemptCount', attempt_count)
       FROM stranded`,
    [shard, timeoutMs, limit, undeliverable],
  );
  return rowCount ?? 0;
}

/**
 * Which of these shards the reaper has anything to do on: a running attempt whose lease ended more than
 * `marginMs` ago, a pending attempt dispatched more than `unstartedAfterMs` ago (the broker check and the
 * stranded re-publish both start there), or a job past its expiry deadline; and which leases are stale.
 * Read-only and unfenced, one statement for all shards (a fenced transaction per shard and round,
 * with nothing to do on almost every one, costs as much as a dispatch round); a shard it misses by a race
 * is seen next round, and the fenced pass decides everything again.
 */
export function shardsToReap(db: Queryable, holder: string, leases: readonly ShardProbe[], args: { marginMs: number; unstartedAfterMs: number }): Promise<ProbeResult> {
  return probeShards(
    db,
    holder,
    leases,
    `EXISTS (SELECT 1 FROM jobs j JOIN attempts a ON a.id = j.current_attempt_id
              WHERE j.shard = s.shard AND j.status = 'running'
                AND a.status = 'running' AND a.lease_expires_at < now() - make_interval(secs => $4 / 1000.0))
     OR EXISTS (SELECT 1 FROM jobs j JOIN attempts a ON a.id = j.current_attempt_id
              WHERE j.shard = s.shard AND j.status = 'dispatched'
                AND a.status = 'pending' AND a.dispatched_at < now() - make_interval(secs => $5 / 1000.0))
     OR EXISTS (SELECT 1 FROM jobs j
              WHERE j.shard = s.shard AND j.expires_at IS NOT NULL AND j.expires_at <= now() AND j.status IN ('scheduled', 'dispatched'))`,
    [args.marginMs, args.unstartedAfterMs],
  );
}
