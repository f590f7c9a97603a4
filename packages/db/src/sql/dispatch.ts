// The dispatch hot path (S2, S8, S12, S16): find tenants with due work, claim their due jobs into
// dispatched attempts (the durable dispatch record, published by the dispatcher once the claim commits).
// Callers run these inside a transaction that first passed the shard fence (shardFenceStatement), so a stale leader's claim
// never commits.
import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";
import type { Queryable } from "./types.js";

/**
 * A suspended tenant (a platform operator's decision) is dispatched like a tenant at its in-flight
 * cap: no room, so none of its jobs is claimed; they wait, scheduled, until it is resumed.
 */
const ROOM_OF_SUSPENDED = "CASE WHEN t.suspended_at IS NULL THEN t.max_in_flight ELSE 0 END";

export interface DueTenant {
  tenant_id: string;
  weight: number;
  max_in_flight: number;
  in_flight: number;
}

/**
 * The dispatched plus running jobs of a tenant of a shard (and of one of its queues), as an SQL expression:
 * one equality range of jobs_live_idx (shard, status, tenant_id, queue_id) per status. Written as
 * `status IN ('dispatched', 'running')` the planner keeps the status as a filter and reads every live job of
 * the tenant: 2,000 index entries and 2,280 heap fetches to count 200 in flight, on every dispatch round,
 * growing with the tenant's backlog.
 */
const inFlightOf = (shard: string, tenant: string, queue?: string) =>
  `(${["dispatched", "running"]
    .map((status) => `(SELECT count(*) FROM jobs f WHERE f.shard = ${shard} AND f.status = '${status}' AND f.tenant_id = ${tenant}${queue ? ` AND f.queue_id = ${queue}` : ""})`)
    .join(" + ")})::int`;

/**
 * Tenants of a shard with at least one due job, with their weight and in-flight count. Walks the
 * distinct tenants with a skip scan (one index probe per tenant) instead of reading every due row.
 */
export async function findDueTenants(db: Queryable, shard: number, limit: number): Promise<DueTenant[]> {
  const { rows } = await db.query<DueTenant>(
    `WITH RECURSIVE due(tenant_id) AS (
       (SELECT tenant_id FROM jobs WHERE shard = $1 AND status = 'scheduled' AND due_at <= now() ORDER BY tenant_id LIMIT 1)
       UNION ALL
       SELECT (SELECT j.tenant_id FROM jobs j
                WHERE j.shard = $1 AND j.status = 'scheduled' AND j.due_at <= now() AND j.tenant_id > due.tenant_id
                ORDER BY j.tenant_id LIMIT 1)
         FROM due WHERE due.tenant_id IS NOT NULL
     )
     SELECT t.id AS tenant_id, t.weight, ${ROOM_OF_SUSPENDED} AS max_in_flight,
            ${inFlightOf("t.shard", "t.id")} AS in_flight
       FROM due JOIN tenants t ON t.id = due.tenant_id
      LIMIT $2`,
    [shard, limit],
  );
  return rows;
}

export interface ClaimedJob {
  id: string;
  tenant_id: string;
  queue_id: string;
  version: number;
  fencing_token: string;
  attempt_id: string;
  priority: number;
  due_at: Date;
  dependency_key: string | null;
  /** Attempts started before this one. */
  attempt_count: number;
  /** The chunk message that carries the attempt (`chunks.ids[...]`), null when no chunks were given. */
  message_id: string | null;
}

/**
 * How the claimed attempts are grouped into broker messages: the claim's n-th row (counting from
 * `offset`, so the claims of one round share chunks) goes in `ids[floor(n / size)]`.
 */
export interface ClaimChunks {
  ids: string[];
  size: number;
  offset: number;
}

/**
 * Claims up to `limit` of one tenant's due jobs, highest priority first, skipping paused queues and paused
 * dependencies and respecting each queue's concurrency and rate: scheduled → dispatched (version + 1) and a
 * new pending attempt with a new attempt ID, the next fencing token and the chunk message that will carry
 * it, all in this one statement. The pending attempt is the durable dispatch record (no outbox row): the
 * dispatcher publishes it after the commit, and the reaper re-publishes one whose message never reached a
 * worker. Rows come back in claim order (priority, then due time). Jobs past their expiry deadline are left
 * for the expiry sweep. SKIP LOCKED lets claims run in parallel. Each queue is read apart (jobs_due_idx leads
 * with the queue), at most its room, so a capped queue's backlog never crowds the tenant's other queues
 * out of the claim.
 *
 * A queue's `rate_per_second` holds in every one-second window of the database clock, across shards
 * and scheduler processes. The window is the second of the transaction's `now()`, which is also the
 * attempts' `dispatched_at`. Window `s` (epoch seconds) may take floor(r·(s+1)) − floor(r·s) claims: exactly
 * r per second for a whole rate, and for a fractional one the allowance carried from second to second, so
 * 0.5/s is one claim every other second and 2.5/s alternates 2 and 3; any k consecutive seconds take at most
 * ceil(r·k). The count lives on the queue row (`rate_window_start`, `rate_window_count`), read under a row
 * lock and advanced by this statement by what it claimed. Only rate-limited queues are locked, and with
 * SKIP LOCKED: a claim that finds one locked by another claim takes nothing from it this time (waiting could
 * deadlock two rounds that lock two tenants' queues in opposite orders), so every claim that counts sees
 * the others' counts. The window only moves forward: a claim whose `now()` falls in an earlier second than
 * the stored window takes nothing from that queue (its attempts would be stamped into a second whose
 * count is gone), and never moves the window back.
 */
export async function claimDueJobs(
  db: Queryable,
  args: {
    shard: number;
    epoch: string;
    tenantId: string;
    limit: number;
    heldDependencies?: string[];
    chunks?: ClaimChunks;
    /**
     * Whether the tenant may have a rate-limited queue (default true). False (the dispatcher read at the start
     * of the round that it has none: roundFacts) claims with a statement without the rate windows' CTEs (less
     * to plan and run). It never claims from a rate-limited queue (it reads only queues without a rate), so
     * a rate set on a queue meanwhile holds its jobs until the next round; it is never exceeded.
     */
    rated?: boolean;
  },
): Promise<ClaimedJob[]> {
  if (args.limit <= 0) return [];
  const rated = args.rated ?? true;
  const chunks = args.chunks ?? { ids: [], size: 1, offset: 0 };
  const claim = JOB_STATUS_WRITES.claimDueJobs;
  const concurrencyRoom = (q: string) =>
    `CASE WHEN ${q}.concurrency IS NULL THEN 2147483647
          ELSE ${q}.concurrency - (${inFlightOf("$1", "$2", `${q}.id`)})
     END`;
  // A due job of this tenant and shard that may go now: not expired, its dependency neither open (breaker)
  // nor paused by the tenant; such jobs wait, scheduled, without burning attempts.
  const due = `j.shard = $1 AND j.tenant_id = $2 AND ${statusIn("j.status", claim.from)} AND j.due_at <= now()
            AND (j.expires_at IS NULL OR j.expires_at > now())
            AND (j.dependency_key IS NULL OR j.dependency_key <> ALL($5::text[]))
            AND (j.dependency_key IS NULL OR NOT EXISTS (SELECT 1 FROM dependency_pauses dp WHERE dp.tenant_id = $2 AND dp.dependency_key = j.dependency_key))`;
  // The rate-limited queues: their rows locked, their window's room, their room beside the others'.
  const ratedCtes = `win AS (
       SELECT date_trunc('second', now()) AS start, extract(epoch FROM date_trunc('second', now()))::numeric AS s
     ), rated AS (
       SELECT q.id, q.concurrency, q.rate_per_second::numeric AS r, q.rate_window_start, q.rate_window_count
         FROM queues q WHERE q.tenant_id = $2 AND NOT q.paused AND q.rate_per_second IS NOT NULL
        ORDER BY q.id
        FOR UPDATE SKIP LOCKED
     ), rated_room AS (
       SELECT q.id AS queue_id,
              CASE WHEN q.rate_window_start = win.start THEN q.rate_window_count ELSE 0 END AS used,
              CASE WHEN q.rate_window_start > win.start THEN 0
                   ELSE least(${concurrencyRoom("q")},
                              floor(q.r * (win.s + 1)) - floor(q.r * win.s)
                                - CASE WHEN q.rate_window_start = win.start THEN q.rate_window_count ELSE 0 END)
              END AS room
         FROM rated q, win
     ), `;
  // Not a named statement: a named one gets a generic plan, made once per connection with the statistics of
  // the moment, and this claim measured badly with one both ways. With its rate windows the generic plan read a
  // 50,000-job backlog on every claim (78 ms a call against 8). Without them, on a table analyzed with 100,000
  // jobs it was the right index scan (100-row claims 5-6 ms against 7-8), but in a full bench run the quiet
  // tenant's p99 went from 205 ms alone to 10 s under the fairness burst (due → claimed 7.7 s); most likely the
  // plan, made at the first claims on a near-empty table, did not fit the burst's backlog (not confirmed). A
  // plan per call costs 1.8-2.2 ms of planning, the price of a plan that fits the backlog at hand.
  const { rows } = await db.query<ClaimedJob>(
    `WITH ${rated ? ratedCtes : ""}room AS (
       SELECT q.id AS queue_id, ${concurrencyRoom("q")} AS room
         FROM queues q WHERE q.tenant_id = $2 AND NOT q.paused AND q.rate_per_second IS NULL
       ${rated ? "UNION ALL SELECT queue_id, room FROM rated_room" : ""}
     ), candidates AS (
       -- Each queue with room gives at most its room (jobs_due_idx is per queue), so the backlog of a capped
       -- queue can neither exceed its cap nor crowd the tenant's other queues out of the claim; then the
       -- best $3 of them, priority first. Locked after the cut, so only what is claimed is locked.
       SELECT c.* FROM room r CROSS JOIN LATERAL (
         SELECT j.id, j.priority, j.due_at FROM jobs j
          WHERE ${due} AND j.queue_id = r.queue_id
          ORDER BY j.priority DESC, j.due_at
          LIMIT least(r.room, $3)::bigint
       ) c
        WHERE r.room > 0
        ORDER BY c.priority DESC, c.due_at
        LIMIT $3
     ), picked AS (
       SELECT j.id FROM jobs j JOIN candidates c ON c.id = j.id
        WHERE ${statusIn("j.status", claim.from)}
          FOR UPDATE OF j SKIP LOCKED
     ), claimed AS (
       UPDATE jobs j
          SET status = ${stateLiteral(claim.to.dispatch)}, version = j.version + 1, fencing_token = j.fencing_token + 1,
              current_attempt_id = gen_random_uuid(), updated_at = now()
         FROM picked p WHERE j.id = p.id AND ${statusIn("j.status", claim.from)}
        RETURNING j.id, j.tenant_id, j.queue_id, j.version, j.fencing_token, j.current_attempt_id AS attempt_id, j.priority, j.due_at,
                  j.dependency_key, j.attempt_count
     ), ${
       rated
         ? `counted AS (
       -- The rate-limited queues' windows advance by what this statement claimed from each.
       UPDATE queues q SET rate_window_start = win.start, rate_window_count = rr.used + n.claimed
         FROM (SELECT queue_id, count(*)::int AS claimed FROM claimed GROUP BY queue_id) n
         JOIN rated_room rr ON rr.queue_id = n.queue_id, win
        WHERE q.id = n.queue_id
     ), `
         : ""
     }ordered AS (
       SELECT c.*, row_number() OVER (ORDER BY c.priority DESC, c.due_at, c.id) AS rn FROM claimed c
     ), numbered AS (
       SELECT o.*, ($6::uuid[])[1 + ($8::int + o.rn - 1) / $7::int] AS message_id FROM ordered o
     ), attempt AS (
       INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at, message_id)
       SELECT attempt_id, id, tenant_id, fencing_token::int, fencing_token, version, $4::bigint, 'pending', now(), message_id FROM numbered
     )
     SELECT id, tenant_id, queue_id, version, fencing_token, attempt_id, priority, due_at, dependency_key, attempt_count, message_id
       FROM numbered ORDER BY rn`,
    [args.shard, args.tenantId, args.limit, args.epoch, args.heldDependencies ?? [], chunks.ids, Math.max(1, chunks.size), chunks.offset],
  );
  return rows.map((r) => ({ ...r, fencing_token: String(r.fencing_token) }));
}

/**
 * What a dispatch round reads before its transaction, in one statement: the dispatched attempts of the shard
 * not yet started by a worker, per tenant (the broker-side backlog, for backpressure and each tenant's fair
 * rank), and which of the round's tenants have a rate-limited queue that is not paused (claimDueJobs'
 * `rated`). Read before the claim, the second may be a round old: a queue given a rate meanwhile is held for a
 * round by the claim without rate windows (it reads only queues without a rate), never over its rate.
 */
export async function roundFacts(db: Queryable, shard: number, tenantIds: readonly string[]): Promise<{ queued: { total: number; byTenant: Map<string, number> }; rated: Set<string> }> {
  const { rows } = await db.query<{ rated: boolean; tenant_id: string; n: number }>(
    `SELECT false AS rated, tenant_id, count(*)::int AS n FROM jobs WHERE shard = $1 AND status = 'dispatched' GROUP BY tenant_id
     UNION ALL
     SELECT DISTINCT true, tenant_id, 0 FROM queues WHERE tenant_id = ANY($2::uuid[]) AND rate_per_second IS NOT NULL AND NOT paused`,
    [shard, tenantIds],
  );
  const queued = rows.filter((r) => !r.rated);
  return {
    queued: { total: queued.reduce((sum, r) => sum + r.n, 0), byTenant: new Map(queued.map((r) => [r.tenant_id, r.n])) },
    rated: new Set(rows.filter((r) => r.rated).map((r) => r.tenant_id)),
  };
}

/** When the tenant's earliest scheduled job of this shard is due (null: none scheduled). */
export async function nextDueAt(db: Queryable, shard: number, tenantId: string): Promise<Date | null> {
  const { rows } = await db.query<{ due_at: Date | null }>(
    `SELECT min(due_at) AS due_at FROM jobs WHERE shard = $1 AND tenant_id = $2 AND status = 'scheduled'`,
    [shard, tenantId],
  );
  return rows[0]?.due_at ?? null;
}

/**
 * For rebuilding the due index: tenants of a shard with scheduled work after `afterTenant` (keyset),
 * each with its earliest due time, one index probe per tenant, at most `limit` tenants per call.
 */
export async function scheduledTenantsPage(
  db: Queryable,
  shard: number,
  afterTenant: string | null,
  limit: number,
): Promise<{ tenant_id: string; next_due_at: Date }[]> {
  const { rows } = await db.query<{ tenant_id: string; next_due_at: Date }>(
    `WITH RECURSIVE t(tenant_id) AS (
       (SELECT tenant_id FROM jobs WHERE shard = $1 AND status = 'scheduled' AND ($2::uuid IS NULL OR tenant_id > $2)
         ORDER BY tenant_id LIMIT 1)
       UNION ALL
       SELECT (SELECT j.tenant_id FROM jobs j WHERE j.shard = $1 AND j.status = 'scheduled' AND j.tenant_id > t.tenant_id
                ORDER BY j.tenant_id LIMIT 1)
         FROM t WHERE t.tenant_id IS NOT NULL
     )
     SELECT t.tenant_id,
            (SELECT min(j.due_at) FROM jobs j WHERE j.shard = $1 AND j.tenant_id = t.tenant_id AND j.status = 'scheduled') AS next_due_at
       FROM t WHERE t.tenant_id IS NOT NULL
      LIMIT $3`,
    [shard, afterTenant, limit],
  );
  return rows;
}

/** Weight and in-flight count of the given tenants (for due tenants found through the index). */
export async function tenantDispatchInfo(db: Queryable, tenantIds: string[]): Promise<DueTenant[]> {
  if (tenantIds.length === 0) return [];
  const { rows } = await db.query<DueTenant>(
    `SELECT t.id AS tenant_id, t.weight, ${ROOM_OF_SUSPENDED} AS max_in_flight,
            ${inFlightOf("t.shard", "t.id")} AS in_flight
       FROM tenants t WHERE t.id = ANY($1::uuid[])`,
    [tenantIds],
  );
  return rows;
}
