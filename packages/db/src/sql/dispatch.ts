// The dispatch hot path (S2, S8, S12, S16): find tenants with due work, claim their due jobs into
// dispatched attempts (the durable dispatch record, published by the dispatcher once the claim commits).
// Callers run these inside a transaction that first passed the shard fence (shardFenceStatement), so a stale leader's claim
// never commits.
import { bucketTokens, CLAIM_TIME } from "./flow-keys.js";
import { JOB_STATUS_WRITES, stateLiteral, statusIn } from "./job-status-writes.js";
import { FENCE_FLOOR } from "./restore-fence.js";
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

/**
 * Each queue with room (`room r`) and its best due jobs without a key, at most its room and the tenant's $3
 * (jobs_due_idx is per queue): the join both claims read their unkeyed jobs through, as `c`.
 */
const queueJobs = (due: string) => `CROSS JOIN LATERAL (
         SELECT j.id, j.priority, j.due_at FROM jobs j
          WHERE ${due} AND j.queue_id = r.queue_id
          ORDER BY j.priority DESC, j.due_at
          LIMIT least(r.room, $3)::bigint
       ) c
        WHERE r.room > 0`;

/**
 * The claim's candidates when no queue of the tenant has keyed jobs: each queue with room gives at most its room
 * (jobs_due_idx is per queue), so the backlog of a capped queue can neither exceed its cap nor crowd the tenant's
 * other queues out of the claim; then the best $3 of them, priority first. Locked after the cut, so only what is
 * claimed is locked.
 */
function plainCandidates(due: string): string {
  return `candidates AS (
       SELECT c.* FROM room r ${queueJobs(due)}
        ORDER BY c.priority DESC, c.due_at
        LIMIT $3
     )`;
}

/**
 * The next flow key after `after` (text order) of a queue with a due job, as an SQL expression: one probe of
 * jobs_key_due_idx, so the scan costs a probe per key with due work and nothing for keys without any.
 */
const nextDueKey = (queue: string, after: string) =>
  `(SELECT j.flow_key FROM jobs j
     WHERE j.queue_id = ${queue} AND j.status = 'scheduled' AND j.flow_key IS NOT NULL AND j.flow_key > ${after}
       AND j.due_at <= ${CLAIM_TIME} AND j.shard = $1
     ORDER BY j.flow_key LIMIT 1)`;

/**
 * Whether a key has room by its cap and pause (its bucket is read later), as an SQL expression: a key without a
 * flow_keys row has nothing in flight and no override.
 */
const keyHasRoom = (queue: string, key: string, kq: string) =>
  `coalesce((SELECT NOT fk.paused AND (coalesce(fk.concurrency, ${kq}.per_key_concurrency) IS NULL OR fk.in_flight < coalesce(fk.concurrency, ${kq}.per_key_concurrency))
               FROM flow_keys fk WHERE fk.queue_id = ${queue} AND fk.key = ${key}), true)`;

/**
 * The claim's candidates when the tenant has a queue with keyed jobs ($9: each queue's round-robin cursor).
 * A keyed queue is shared between its keys round-robin: the key scan (kscan) walks the keys with due jobs from
 * the key after the cursor, wrapping around, until it has the queue's room of keys with room (at most 4 × room
 * keys in all, so a freed slot behind keys at their cap is found soon, at a bounded cost); each key's room is its cap
 * (override, else the queue's perKeyConcurrency) less its attempts in flight (flow_keys.in_flight), and its
 * rate bucket's whole tokens, nothing while it is paused; each key gives at most weight × the turns the room
 * allows (room ÷ keys with room). Candidates are ranked by priority, then turn (a key's n-th job is in turn
 * ceil(n / weight)), then the key's place in the scan: a key with one due job is served in the first turn
 * beside a key with 100,000. The room the first turns leave (keys with fewer due jobs than their share) goes to
 * the keys that gave their whole share, in later turns. Jobs without a key in a keyed queue take turns as one more key; a queue without
 * keyed jobs gives its jobs in turn 1, as the plain claim does. Each queue gives at most its room, the tenant $3.
 */
function keyedCandidates(dueOfKey: (queue: string, key: string) => string, due: string): string {
  return `kq AS (
       SELECT r.queue_id, least(r.room, $3)::int AS room, q.per_key_concurrency, q.per_key_rate_limit, q.per_key_rate_period_ms,
              coalesce($9::jsonb ->> r.queue_id::text, '') AS cursor
         FROM room r JOIN queues q ON q.id = r.queue_id
        WHERE r.keyed AND r.room > 0
     ), kscan(queue_id, k, n, open, wrapped) AS (
       -- open: keys visited so far with room by their cap and pause (the scan stops at the queue's room of them,
       -- or after 4 × room keys, so keys at their cap neither use up the scan nor make it long).
       SELECT kq.queue_id, f.k, 1, CASE WHEN ${keyHasRoom("kq.queue_id", "f.k", "kq")} THEN 1 ELSE 0 END, f.wrapped FROM kq CROSS JOIN LATERAL (
         SELECT CASE WHEN a.k IS NOT NULL THEN a.k ELSE ${nextDueKey("kq.queue_id", "''")} END AS k, a.k IS NULL AS wrapped
           FROM (SELECT ${nextDueKey("kq.queue_id", "kq.cursor")} AS k) a
       ) f
       UNION ALL
       SELECT s.queue_id, f.k, s.n + 1, s.open + CASE WHEN ${keyHasRoom("s.queue_id", "f.k", "kq")} THEN 1 ELSE 0 END, f.wrapped
         FROM kscan s JOIN kq ON kq.queue_id = s.queue_id CROSS JOIN LATERAL (
         SELECT CASE WHEN a.k IS NOT NULL OR s.wrapped THEN a.k ELSE ${nextDueKey("s.queue_id", "''")} END AS k,
                (s.wrapped OR a.k IS NULL) AS wrapped
           FROM (SELECT ${nextDueKey("s.queue_id", "s.k")} AS k) a
       ) f
        WHERE s.k IS NOT NULL AND (NOT s.wrapped OR s.k < kq.cursor) AND s.open < kq.room AND s.n < 4 * kq.room
     ), kstate AS (
       SELECT s.queue_id, s.k, s.n, greatest(coalesce(fk.weight, 1), 1) AS weight, tb.avail,
              CASE WHEN coalesce(fk.paused, false) THEN 0
                   ELSE greatest(0, least(coalesce(coalesce(fk.concurrency, kq.per_key_concurrency) - coalesce(fk.in_flight, 0), 2147483647),
                                          coalesce(floor(tb.avail)::int, 2147483647)))
              END AS room
         FROM kscan s JOIN kq ON kq.queue_id = s.queue_id
         LEFT JOIN flow_keys fk ON fk.queue_id = s.queue_id AND fk.key = s.k
         LEFT JOIN flow_key_buckets b ON b.queue_id = s.queue_id AND b.key = s.k
         CROSS JOIN LATERAL (
           SELECT coalesce(fk.rate_limit, kq.per_key_rate_limit) AS rl, coalesce(fk.rate_period_ms, kq.per_key_rate_period_ms) AS rp
         ) r
         CROSS JOIN LATERAL (
           SELECT CASE WHEN r.rl IS NULL OR r.rp IS NULL THEN NULL
                       ELSE ${bucketTokens("b", "r.rl", "r.rp", CLAIM_TIME)}
                  END AS avail
         ) tb
        WHERE s.k IS NOT NULL AND (NOT s.wrapped OR s.k <= kq.cursor)
     ), kshare AS (
       SELECT ks.*, least(ks.room, ks.weight * ceil(kq.room::numeric / greatest(1, count(*) FILTER (WHERE ks.room > 0) OVER (PARTITION BY ks.queue_id))))::int AS take
         FROM kstate ks JOIN kq ON kq.queue_id = ks.queue_id
     ), key_first AS (
       -- Numbered outside the LATERAL: a window function inside it reads on past the LIMIT (10,001 rows a key).
       SELECT ks.queue_id, ks.k, ks.n, ks.weight, ks.room, ks.take, c.id, c.priority, c.due_at,
              row_number() OVER (PARTITION BY ks.queue_id, ks.k ORDER BY c.priority DESC, c.due_at) AS rn
         FROM kshare ks CROSS JOIN LATERAL (
           SELECT j.id, j.priority, j.due_at FROM jobs j
            WHERE ${dueOfKey("ks.queue_id", "ks.k")}
            ORDER BY j.priority DESC, j.due_at
            LIMIT ks.take
         ) c
        WHERE ks.take > 0
     ), key_more AS (
       -- The room the first turns left (keys with fewer due jobs than their share) goes to the keys that
       -- gave their whole share, each up to that much more, in later turns.
       SELECT f.queue_id, f.k, f.n, f.weight, c.id, c.priority, c.due_at,
              f.take + row_number() OVER (PARTITION BY f.queue_id, f.k ORDER BY c.priority DESC, c.due_at) AS rn
         FROM (SELECT queue_id, k, n, weight, room, take FROM key_first GROUP BY queue_id, k, n, weight, room, take HAVING count(*) = take) f
         JOIN (SELECT kq.queue_id, kq.room - (SELECT count(*) FROM key_first x WHERE x.queue_id = kq.queue_id) AS left_over FROM kq) lo
           ON lo.queue_id = f.queue_id AND lo.left_over > 0 AND f.room > f.take
         CROSS JOIN LATERAL (
           SELECT j.id, j.priority, j.due_at FROM jobs j
            WHERE ${dueOfKey("f.queue_id", "f.k")}
            ORDER BY j.priority DESC, j.due_at
            OFFSET f.take LIMIT least(f.room - f.take, lo.left_over)
         ) c
     ), offered AS (
       SELECT r.queue_id, c.id, c.priority, c.due_at,
              CASE WHEN r.keyed THEN row_number() OVER (PARTITION BY r.queue_id ORDER BY c.priority DESC, c.due_at) ELSE 1 END AS turn, 0 AS visit
         FROM room r ${queueJobs(due)}
       UNION ALL
       SELECT queue_id, id, priority, due_at, ceil(rn::numeric / weight), n FROM key_first
       UNION ALL
       SELECT queue_id, id, priority, due_at, ceil(rn::numeric / weight), n FROM key_more
     ), ranked AS (
       SELECT o.*, row_number() OVER (PARTITION BY o.queue_id ORDER BY o.priority DESC, o.turn, o.visit, o.due_at) AS qrn FROM offered o
     ), candidates AS (
       SELECT rk.id, rk.priority, rk.due_at FROM ranked rk JOIN room r ON r.queue_id = rk.queue_id
        WHERE rk.qrn <= r.room
        ORDER BY rk.priority DESC, rk.turn, rk.visit, rk.due_at
        LIMIT $3
     )`;
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
  /** The job's flow key (null: none). */
  flow_key: string | null;
  /** The key's place in this claim's key scan (1 = first after the cursor); null for a job without a key. */
  key_visit: number | null;
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
 * new pending attempt with a new attempt ID, the next fencing token (one more than the job's last, or the last
 * restore fence's floor if that is higher: restore-fence.ts) and the chunk message that will carry it, all in
 * this one statement. The pending attempt is the durable dispatch record (no outbox row): the
 * dispatcher publishes it after the commit, and the reaper re-publishes one whose message never reached a
 * worker. Rows come back in claim order (priority, then due time). Jobs past their expiry deadline are left
 * for the expiry sweep. SKIP LOCKED lets claims run in parallel. Each queue is read apart (jobs_due_idx leads
 * with the queue), at most its room, so a capped queue's backlog never crowds the tenant's other queues
 * out of the claim.
 *
 * A queue's `rate_per_second` holds in every one-second window of the database clock, across shards
 * and scheduler processes. The window is the second of the claim's time (CLAIM_TIME, when its statement
 * began), which is also the attempts' `dispatched_at` and `claimed_at`. Window `s` (epoch seconds) may take floor(r·(s+1)) − floor(r·s) claims: exactly
 * r per second for a whole rate, and for a fractional one the allowance carried from second to second, so
 * 0.5/s is one claim every other second and 2.5/s alternates 2 and 3; any k consecutive seconds take at most
 * ceil(r·k). The count lives on the queue row (`rate_window_start`, `rate_window_count`), read under a row
 * lock and advanced by this statement by what it claimed. Only rate-limited queues are locked, and with
 * SKIP LOCKED: a claim that finds one locked by another claim takes nothing from it this time (waiting could
 * deadlock two rounds that lock two tenants' queues in opposite orders), so every claim that counts sees
 * the others' counts. The window only moves forward: a claim whose time falls in an earlier second than
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
    /**
     * Whether the tenant may have a queue with keyed jobs (roundFacts; default true). False claims with the
     * statement without the key scan; keyed jobs are then left for the next round (never claimed past a cap).
     */
    keyed?: boolean;
    /**
     * Per queue, the flow key the key scan last served (the round-robin position, kept by the dispatcher): the
     * scan starts after it and wraps around. Absent: from the first key.
     */
    keyCursors?: Readonly<Record<string, string>>;
  },
): Promise<ClaimedJob[]> {
  if (args.limit <= 0) return [];
  const rated = args.rated ?? true;
  const keyed = args.keyed ?? true;
  const chunks = args.chunks ?? { ids: [], size: 1, offset: 0 };
  const claim = JOB_STATUS_WRITES.claimDueJobs;
  const concurrencyRoom = (q: string) =>
    `CASE WHEN ${q}.concurrency IS NULL THEN 2147483647
          ELSE ${q}.concurrency - (${inFlightOf("$1", "$2", `${q}.id`)})
     END`;
  // A due job of this tenant and shard that may go now: not expired, its dependency neither open (breaker)
  // nor paused by the tenant; such jobs wait, scheduled, without burning attempts.
  const mayGo = `j.shard = $1 AND j.tenant_id = $2 AND ${statusIn("j.status", claim.from)} AND j.due_at <= ${CLAIM_TIME}
            AND (j.expires_at IS NULL OR j.expires_at > ${CLAIM_TIME})
            AND (j.dependency_key IS NULL OR j.dependency_key <> ALL($5::text[]))
            AND (j.dependency_key IS NULL OR NOT EXISTS (SELECT 1 FROM dependency_pauses dp WHERE dp.tenant_id = $2 AND dp.dependency_key = j.dependency_key))`;
  // Jobs without a flow key (jobs_due_idx holds only those) and jobs of one key (jobs_key_due_idx).
  const due = `${mayGo} AND j.flow_key IS NULL`;
  const dueOfKey = (queue: string, key: string) => `${mayGo} AND j.flow_key IS NOT NULL AND j.queue_id = ${queue} AND j.flow_key = ${key}`;
  // The rate-limited queues: their rows locked, their window's room, their room beside the others'.
  const ratedCtes = `win AS (
       SELECT date_trunc('second', ${CLAIM_TIME}) AS start, extract(epoch FROM date_trunc('second', ${CLAIM_TIME}))::numeric AS s
     ), rated AS (
       SELECT q.id, q.concurrency, q.flow_keyed, q.rate_per_second::numeric AS r, q.rate_window_start, q.rate_window_count
         FROM queues q WHERE q.tenant_id = $2 AND NOT q.paused AND q.rate_per_second IS NOT NULL
        ORDER BY q.id
        FOR UPDATE SKIP LOCKED
     ), rated_room AS (
       SELECT q.id AS queue_id, q.flow_keyed AS keyed,
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
    `WITH ${keyed ? "RECURSIVE " : ""}${rated ? ratedCtes : ""}room AS (
       SELECT q.id AS queue_id, q.flow_keyed AS keyed, ${concurrencyRoom("q")} AS room
         FROM queues q WHERE q.tenant_id = $2 AND NOT q.paused AND q.rate_per_second IS NULL
       ${rated ? "UNION ALL SELECT queue_id, keyed, room FROM rated_room" : ""}
     ), ${keyed ? keyedCandidates(dueOfKey, due) : plainCandidates(due)}, picked AS (
       -- A row changed since this statement's snapshot is locked in its committed version and judged again by
       -- these conditions: a job moved into the future meanwhile (a trailing debounce folding a create into it)
       -- is not due any more and stays scheduled.
       SELECT j.id FROM jobs j JOIN candidates c ON c.id = j.id
        WHERE ${statusIn("j.status", claim.from)} AND j.due_at <= ${CLAIM_TIME}
          FOR UPDATE OF j SKIP LOCKED
     ), claimed AS (
       UPDATE jobs j
          SET status = ${stateLiteral(claim.to.dispatch)}, version = j.version + 1, fencing_token = greatest(j.fencing_token + 1, ${FENCE_FLOOR}),
              current_attempt_id = gen_random_uuid(), updated_at = ${CLAIM_TIME}
         FROM picked p WHERE j.id = p.id AND ${statusIn("j.status", claim.from)}
        RETURNING j.id, j.tenant_id, j.queue_id, j.version, j.fencing_token, j.current_attempt_id AS attempt_id, j.priority, j.due_at,
                  j.dependency_key, j.flow_key, j.attempt_count
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
     }${
       keyed
         ? `spent AS (
       -- The rate-limited keys' buckets lose what this statement claimed from each (their in-flight counts move
       -- with the jobs' status: the trigger flow_key_in_flight).
       INSERT INTO flow_key_buckets (queue_id, key, tokens, tokens_at)
       SELECT ks.queue_id, ks.k, ks.avail - n.claimed, ${CLAIM_TIME}
         FROM (SELECT queue_id, flow_key, count(*)::int AS claimed FROM claimed WHERE flow_key IS NOT NULL GROUP BY queue_id, flow_key) n
         JOIN kstate ks ON ks.queue_id = n.queue_id AND ks.k = n.flow_key
        WHERE ks.avail IS NOT NULL
       ON CONFLICT (queue_id, key) DO UPDATE SET tokens = EXCLUDED.tokens, tokens_at = EXCLUDED.tokens_at
     ), `
         : ""
     }ordered AS (
       SELECT c.*, row_number() OVER (ORDER BY c.priority DESC, c.due_at, c.id) AS rn FROM claimed c
     ), numbered AS (
       SELECT o.*, ($6::uuid[])[1 + ($8::int + o.rn - 1) / $7::int] AS message_id FROM ordered o
     ), attempt AS (
       INSERT INTO attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at, claimed_at, message_id)
       -- The attempt's number counts the job's attempts (1, 2, ...); its token may have jumped to a restore fence's floor.
       SELECT attempt_id, id, tenant_id, (SELECT coalesce(max(a.number), 0) + 1 FROM attempts a WHERE a.job_id = numbered.id), fencing_token, version,
              $4::bigint, 'pending', ${CLAIM_TIME}, ${CLAIM_TIME}, message_id
         FROM numbered
     )
     SELECT c.id, c.tenant_id, c.queue_id, c.version, c.fencing_token, c.attempt_id, c.priority, c.due_at, c.dependency_key, c.flow_key,
            c.attempt_count, c.message_id, ${keyed ? "kv.n" : "NULL::int"} AS key_visit
       FROM numbered c ${keyed ? "LEFT JOIN kstate kv ON kv.queue_id = c.queue_id AND kv.k = c.flow_key" : ""}
      ORDER BY c.rn`,
    [
      args.shard,
      args.tenantId,
      args.limit,
      args.epoch,
      args.heldDependencies ?? [],
      chunks.ids,
      Math.max(1, chunks.size),
      chunks.offset,
      ...(keyed ? [JSON.stringify(args.keyCursors ?? {})] : []),
    ],
  );
  return rows.map((r) => ({ ...r, fencing_token: String(r.fencing_token) }));
}

/**
 * Where each keyed queue's round robin goes on after a claim: the key of its claimed job that came latest in
 * the key scan (the next claim starts after it). Queues the claim took no keyed job from keep their cursor.
 */
export function advanceKeyCursors(cursors: Record<string, string>, claimed: readonly ClaimedJob[]): void {
  const latest = new Map<string, { key: string; visit: number }>();
  for (const job of claimed) {
    if (job.flow_key === null || job.key_visit === null) continue;
    const seen = latest.get(job.queue_id);
    if (!seen || job.key_visit > seen.visit) latest.set(job.queue_id, { key: job.flow_key, visit: job.key_visit });
  }
  for (const [queueId, { key }] of latest) cursors[queueId] = key;
}

/**
 * What a dispatch round reads before its transaction, in one statement: the dispatched attempts of the shard
 * not yet started by a worker, per tenant (the broker-side backlog, for backpressure and each tenant's fair
 * rank), which of the round's tenants have a rate-limited queue that is not paused (claimDueJobs' `rated`), and
 * which have a queue with keyed jobs (`keyed`), and which have one that drops a key's jobs beyond its rate
 * (`dropping`: the round ends those after its claims, sql.dropRateLimitedJobs). Read before the claim, these may be a round old: a queue given a
 * rate meanwhile is held for a round by the claim without rate windows (it reads only queues without a rate),
 * never over its rate; a queue's first keyed jobs wait a round for the key scan.
 */
export async function roundFacts(
  db: Queryable,
  shard: number,
  tenantIds: readonly string[],
): Promise<{ queued: { total: number; byTenant: Map<string, number> }; rated: Set<string>; keyed: Set<string>; dropping: Set<string> }> {
  const { rows } = await db.query<{ kind: "queued" | "rated" | "keyed" | "dropping"; tenant_id: string; n: number }>(
    `SELECT 'queued' AS kind, tenant_id, count(*)::int AS n FROM jobs WHERE shard = $1 AND status = 'dispatched' GROUP BY tenant_id
     UNION ALL
     SELECT DISTINCT 'rated', tenant_id, 0 FROM queues WHERE tenant_id = ANY($2::uuid[]) AND rate_per_second IS NOT NULL AND NOT paused
     UNION ALL
     SELECT DISTINCT 'keyed', tenant_id, 0 FROM queues WHERE tenant_id = ANY($2::uuid[]) AND flow_keyed AND NOT paused
     UNION ALL
     SELECT DISTINCT 'dropping', tenant_id, 0 FROM queues
      WHERE tenant_id = ANY($2::uuid[]) AND flow_keyed AND NOT paused AND per_key_rate_mode = 'drop' AND per_key_rate_limit IS NOT NULL`,
    [shard, tenantIds],
  );
  const queued = rows.filter((r) => r.kind === "queued");
  const tenantsOf = (kind: "rated" | "keyed" | "dropping") => new Set(rows.filter((r) => r.kind === kind).map((r) => r.tenant_id));
  return {
    queued: { total: queued.reduce((sum, r) => sum + r.n, 0), byTenant: new Map(queued.map((r) => [r.tenant_id, r.n])) },
    rated: tenantsOf("rated"),
    keyed: tenantsOf("keyed"),
    dropping: tenantsOf("dropping"),
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
