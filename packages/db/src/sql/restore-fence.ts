// The restore fence (`npm run tick -- restore fence`, docs/operations.md "Backup and restore"). A database
// restored to a point T has forgotten every fencing token and shard epoch it issued after T, and would issue
// them again: a target that saw token 7 for one attempt after T would see token 7 for another. What was issued
// after T cannot be read back, so the fence bounds it with the wall clock instead: every token and epoch is a
// counter that starts at 0 or at an earlier fence's floor and grows by one per claim (per takeover), and one job
// is never claimed (a shard never taken over) a thousand times in a millisecond, so every value issued before
// the instant W is below W's epoch milliseconds × 1000. The fence takes W from the database clock, refuses when
// that clock is not past the newest instant in the restored data (a clock gone backwards would break the bound),
// and sets the floor: claims give greatest(token + 1, floor) from then on, and the fence advances every shard
// epoch and every in-flight attempt's token to at least the floor itself.
import type pg from "pg";
import { inTransaction } from "../in-transaction.js";
import { statusIn } from "./job-status-writes.js";

/**
 * The highest restore fence's floor (0 before any fence), as an SQL expression: fencing tokens a claim gives
 * and the epochs of shard leases created after a fence are at least this.
 */
export const FENCE_FLOOR = "(SELECT coalesce(max(token_floor), 0) FROM restore_fences)";

/** How far behind the newest instant in the data the clock may read without being taken as gone backwards. */
const CLOCK_SLACK_MS = 2;

/** What one fence did. */
export interface RestoreFence {
  id: string;
  /** The database clock when the fence ran. */
  fencedAt: Date;
  /** Every fencing token and shard epoch issued from now on is at least this (fencedAt's epoch ms × 1000). */
  tokenFloor: string;
  /** The newest instant the restored data showed; the clock was past it. */
  newestDataAt: Date | null;
  /** Each shard lease, released, with its epoch before and after. */
  shards: { shard: number; from: string; to: string }[];
  /** Attempts that were dispatched or running at the restore point: their tokens advanced, their leases ended. */
  attemptsInFlight: number;
  /** The refusals `force` overrode. */
  overridden: string[];
}

/** The fence would not run: why, and whether `force` may override it (a clock behind the data may not). */
export class RestoreFenceRefused extends Error {
  constructor(
    readonly reasons: string[],
    readonly overridable: boolean,
  ) {
    super(`restore fence refused: ${reasons.join("; ")}`);
    this.name = "RestoreFenceRefused";
  }
}

interface Facts {
  now: Date;
  newest_data_at: Date | null;
  server_started_at: Date;
}

/**
 * Fences a database restored from a backup, in one transaction, before any app connects to it:
 * - refuses if the database clock is not past the newest instant in the restored data: the last commit replayed
 *   by the recovery, lease renewals, node heartbeats, earlier fences (never overridable);
 * - refuses, unless `force`, while anything else is connected to the database or an app seems to be running on
 *   it (a shard lease or heartbeat written since this server started, or a shard lease not yet expired): the
 *   fence must come before the apps, or they would have handed out the old values already;
 * - records the fence (restore_fences) with its floor, the clock's epoch milliseconds × 1000;
 * - releases every shard lease and advances its epoch to greatest(epoch + 1, floor);
 * - advances the token of every job dispatched or running, and of its current attempt, to greatest(token + 1,
 *   floor), and ends the running attempts' leases: their workers belong to the timeline that was lost, and the
 *   reaper retries them (a pending attempt is re-published under its new token, since Redis starts empty);
 * - moves the audit log's id sequence to the floor (entry ids are the API's cursor).
 * Jobs not in flight keep their token: their next claim gets the floor (FENCE_FLOOR in sql.claimDueJobs), so the
 * fence writes no row per scheduled or finished job.
 */
export async function fenceRestoredDatabase(pool: pg.Pool, options: { force?: boolean } = {}): Promise<RestoreFence> {
  return inTransaction(pool, async (client) => {
    // Two fences at once take turns (the second sees the first's row as data, and its clock past it).
    await client.query("LOCK TABLE restore_fences IN SHARE ROW EXCLUSIVE MODE");
    const { rows } = await client.query<Facts>(
      `SELECT clock_timestamp() AS now, pg_postmaster_start_time() AS server_started_at,
              greatest(pg_last_xact_replay_timestamp(),
                       (SELECT max(greatest(renewed_at, acquired_at)) FROM shard_leases),
                       (SELECT max(heartbeat_at) FROM scheduler_nodes),
                       (SELECT max(heartbeat_at) FROM worker_nodes),
                       (SELECT max(fenced_at) FROM restore_fences)) AS newest_data_at`,
    );
    const facts = rows[0]!;
    // Instants are stored to the millisecond, rounded (a lease renewed at .1236 reads .124), and read here to the
    // millisecond, truncated: a clock that went backwards is one at least CLOCK_SLACK_MS behind the data.
    if (facts.newest_data_at !== null && facts.now.getTime() + CLOCK_SLACK_MS <= facts.newest_data_at.getTime()) {
      throw new RestoreFenceRefused(
        [
          `the database clock (${facts.now.toISOString()}) is not past the newest instant in the restored data (${facts.newest_data_at.toISOString()}): ` +
            "set the clock right (NTP) and run the fence again; a floor taken from a clock that went backwards could be below tokens already issued",
        ],
        false,
      );
    }
    const live = await liveUse(client);
    if (live.length > 0 && !options.force) throw new RestoreFenceRefused(live, true);
    const fence = await client.query<{ id: string; fenced_at: Date; token_floor: string; newest_data_at: Date | null }>(
      `INSERT INTO restore_fences (fenced_at, token_floor, newest_data_at, shards, attempts_in_flight, overridden)
       SELECT $1::timestamptz, greatest(floor(extract(epoch FROM $1::timestamptz) * 1000)::bigint * 1000, ${FENCE_FLOOR} + 1), $2, 0, 0, $3::text[]
       RETURNING id::text, fenced_at, token_floor::text, newest_data_at`,
      [facts.now, facts.newest_data_at, live],
    );
    const { id, token_floor: floor } = fence.rows[0]!;
    const shards = await client.query<{ shard: number; from: string; to: string }>(
      `UPDATE shard_leases l SET epoch = greatest(l.epoch + 1, $1::bigint), holder = NULL, expires_at = $2::timestamptz
         FROM (SELECT shard, epoch FROM shard_leases FOR UPDATE) b
        WHERE l.shard = b.shard
        RETURNING l.shard, b.epoch::text AS from, l.epoch::text AS to`,
      [floor, facts.now],
    );
    const inFlight = await client.query<{ attempts: number }>(
      `WITH advanced AS (
         UPDATE jobs j SET fencing_token = greatest(j.fencing_token + 1, $1::bigint)
          WHERE ${statusIn("j.status", ["dispatched", "running"])}
          RETURNING j.current_attempt_id, j.fencing_token
       ), ended AS (
         UPDATE attempts a SET fencing_token = v.fencing_token, lease_expires_at = least(a.lease_expires_at, $2::timestamptz)
           FROM advanced v
          WHERE a.id = v.current_attempt_id AND a.status IN ('pending', 'running')
          RETURNING a.id
       )
       SELECT count(*)::int AS attempts FROM ended`,
      [floor, facts.now],
    );
    const attemptsInFlight = inFlight.rows[0]!.attempts;
    // Audit entries are listed by id (their cursor) through the API: ids after the restore point would be given
    // to other entries. The ids of outbox rows and breaker openings never leave the database, and are not fenced.
    await client.query(`SELECT setval(pg_get_serial_sequence('audit_log', 'id'), greatest((SELECT coalesce(max(id), 0) FROM audit_log), $1::bigint))`, [floor]);
    await client.query(`UPDATE restore_fences SET shards = $2, attempts_in_flight = $3 WHERE id = $1`, [id, shards.rowCount ?? 0, attemptsInFlight]);
    return {
      id,
      fencedAt: fence.rows[0]!.fenced_at,
      tokenFloor: floor,
      newestDataAt: fence.rows[0]!.newest_data_at,
      shards: shards.rows.sort((a, b) => a.shard - b.shard),
      attemptsInFlight,
      overridden: live,
    };
  });
}

/**
 * Signs that something uses this database now: other sessions, and apps' writes since this server started (a
 * restored database's own rows are all older than its server) or leases that have not expired yet.
 */
async function liveUse(client: pg.PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ what: string }>(
    `SELECT format('%s other session(s) connected (%s)', count(*), string_agg(DISTINCT coalesce(nullif(application_name, ''), 'unnamed') || coalesce(' from ' || host(client_addr), ''), ', ')) AS what
       FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
     HAVING count(*) > 0
     UNION ALL
     SELECT format('shard %s''s lease, held by %s, was renewed at %s, after this server started (%s)', shard, coalesce(holder, 'nobody'), renewed_at, pg_postmaster_start_time())
       FROM shard_leases WHERE renewed_at > pg_postmaster_start_time()
     UNION ALL
     SELECT format('shard %s''s lease is held by %s until %s', shard, holder, expires_at)
       FROM shard_leases WHERE holder IS NOT NULL AND expires_at > clock_timestamp() AND (renewed_at IS NULL OR renewed_at <= pg_postmaster_start_time())
     UNION ALL
     SELECT format('%s %s heartbeat at %s, after this server started', kind, id, heartbeat_at)
       FROM (SELECT 'scheduler' AS kind, id, heartbeat_at FROM scheduler_nodes UNION ALL SELECT 'worker', id, heartbeat_at FROM worker_nodes) n
      WHERE heartbeat_at > pg_postmaster_start_time()`,
  );
  return rows.map((r) => r.what);
}
