// A queue's flow keys as the console and the API read and set them (docs/api.md "Flow keys"): live figures per
// key from the jobs themselves, the in-flight count the claim enforces (flow_keys.in_flight), the limits in
// force (a key's override, else the queue's), and the tenant's overrides and pauses.
import type { Queryable } from "./types.js";

/**
 * The time a claim judges and spends by (due times, expiries, rate windows, token buckets) and stamps its attempts
 * with, and the drop that follows it in the same transaction: when the statement began, not its transaction
 * (now()). A dispatch round's transaction begins with the shard fence; a scheduler paused between the two (a stop,
 * a long GC) claims seconds after its transaction's now(), and must agree with what other transactions did
 * meanwhile (the clean-up forgetting a bucket that was full again by then, say).
 */
export const CLAIM_TIME = "statement_timestamp()";

/**
 * The per-key rate in force for a key, as SQL over its `flow_keys` row `fk` (absent: none) and its queue `q`: an
 * override that sets a limit brings its own period; otherwise the queue's limit and period.
 */
export const KEY_RATE_LIMIT = "coalesce(fk.rate_limit, q.per_key_rate_limit)";
export const KEY_RATE_PERIOD_MS = "CASE WHEN fk.rate_limit IS NOT NULL THEN fk.rate_period_ms ELSE q.per_key_rate_period_ms END";

/**
 * A key's tokens at `at` (SQL expressions): its bucket `b` (a flow_key_buckets row; none is a full bucket) refilled
 * at `limit` per `periodMs` since it was last spent, never above `limit`.
 */
export function bucketTokens(b: string, limit: string, periodMs: string, at: string): string {
  return `least(${limit}::float8, coalesce(${b}.tokens, ${limit}) + extract(epoch FROM ${at} - coalesce(${b}.tokens_at, ${at}))::float8 * 1000.0 * ${limit} / ${periodMs})`;
}

export interface FlowKeyRow {
  key: string;
  due: number;
  scheduled: number;
  in_flight: number;
  oldest_due_age_ms: number | null;
  paused: boolean;
  /** The limits in force. */
  concurrency: number | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  weight: number;
  /** The override as set (null fields: the queue's). */
  override_concurrency: number | null;
  override_rate_limit: number | null;
  override_rate_period_ms: number | null;
  override_weight: number | null;
  overridden_at: Date | null;
}

export interface FlowKeyTotals {
  keys_with_work: number;
  keys_at_cap: number;
  keys_paused: number;
}

export type FlowKeySort = "backlog" | "in_flight" | "waiting";

const ORDER: Record<FlowKeySort, string> = {
  backlog: "due DESC, scheduled DESC, key",
  in_flight: "in_flight DESC, due DESC, key",
  waiting: "oldest_due_age_ms DESC NULLS LAST, due DESC, key",
};

/**
 * Every key of the queue with a scheduled job, an attempt in flight, an override or a pause, with its figures
 * and limits, as a CTE named `keys` (`$1` queue, `$2` tenant, `$3` one key or null for all).
 */
const KEYS = `live AS (
       SELECT j.flow_key AS key,
              count(*) FILTER (WHERE j.due_at <= now())::int AS due,
              count(*)::int AS scheduled,
              floor(extract(epoch FROM now() - min(j.due_at) FILTER (WHERE j.due_at <= now())) * 1000)::float8 AS oldest_due_age_ms
         FROM jobs j
        WHERE j.queue_id = $1 AND j.tenant_id = $2 AND j.status = 'scheduled' AND j.flow_key IS NOT NULL AND ($3::text IS NULL OR j.flow_key = $3)
        GROUP BY j.flow_key
     ), named AS (
       SELECT key FROM live
       UNION
       SELECT fk.key FROM flow_keys fk
        WHERE fk.queue_id = $1 AND fk.tenant_id = $2 AND (fk.in_flight > 0 OR fk.overridden_at IS NOT NULL OR fk.paused) AND ($3::text IS NULL OR fk.key = $3)
     ), keys AS (
       SELECT n.key, coalesce(l.due, 0) AS due, coalesce(l.scheduled, 0) AS scheduled, coalesce(fk.in_flight, 0) AS in_flight,
              l.oldest_due_age_ms, coalesce(fk.paused, false) AS paused,
              coalesce(fk.concurrency, q.per_key_concurrency) AS concurrency,
              ${KEY_RATE_LIMIT} AS rate_limit,
              ${KEY_RATE_PERIOD_MS} AS rate_period_ms,
              coalesce(fk.weight, 1) AS weight,
              fk.concurrency AS override_concurrency, fk.rate_limit AS override_rate_limit, fk.rate_period_ms AS override_rate_period_ms,
              fk.weight AS override_weight, fk.overridden_at
         FROM named n
         JOIN queues q ON q.id = $1
         LEFT JOIN live l ON l.key = n.key
         LEFT JOIN flow_keys fk ON fk.queue_id = $1 AND fk.key = n.key
     )`;

/** The queue's top keys by `sort`, and totals over all its keys. */
export async function listFlowKeys(
  db: Queryable,
  tenantId: string,
  queueId: string,
  options: { sort: FlowKeySort; limit: number; paused?: boolean; overridden?: boolean },
): Promise<{ keys: FlowKeyRow[]; totals: FlowKeyTotals }> {
  const { rows } = await db.query<FlowKeyRow & { totals: FlowKeyTotals }>(
    `WITH ${KEYS}, totals AS (
       SELECT json_build_object(
                'keys_with_work', count(*) FILTER (WHERE scheduled > 0 OR in_flight > 0),
                'keys_at_cap', count(*) FILTER (WHERE due > 0 AND concurrency IS NOT NULL AND in_flight >= concurrency),
                'keys_paused', count(*) FILTER (WHERE paused)) AS totals
         FROM keys
     ), picked AS (
       SELECT * FROM keys
        WHERE ($4::boolean IS NULL OR paused = $4) AND ($5::boolean IS NULL OR (overridden_at IS NOT NULL) = $5)
        ORDER BY ${ORDER[options.sort]}
        LIMIT $6
     )
     SELECT p.*, t.totals FROM totals t LEFT JOIN picked p ON true`,
    [queueId, tenantId, null, options.paused ?? null, options.overridden ?? null, options.limit],
  );
  const totals = rows[0]?.totals ?? { keys_with_work: 0, keys_at_cap: 0, keys_paused: 0 };
  return { keys: rows.filter((r) => r.key !== null).map(({ totals: _, ...r }) => r), totals };
}

/** One key of the queue (zeros under the queue's limits when it has no job and no override). */
export async function findFlowKey(db: Queryable, tenantId: string, queueId: string, key: string): Promise<FlowKeyRow> {
  const { rows } = await db.query<FlowKeyRow>(`WITH ${KEYS} SELECT * FROM keys`, [queueId, tenantId, key]);
  if (rows[0]) return rows[0];
  const { rows: q } = await db.query<{ per_key_concurrency: number | null; per_key_rate_limit: number | null; per_key_rate_period_ms: number | null }>(
    `SELECT per_key_concurrency, per_key_rate_limit, per_key_rate_period_ms FROM queues WHERE id = $1 AND tenant_id = $2`,
    [queueId, tenantId],
  );
  return {
    key,
    due: 0,
    scheduled: 0,
    in_flight: 0,
    oldest_due_age_ms: null,
    paused: false,
    concurrency: q[0]?.per_key_concurrency ?? null,
    rate_limit: q[0]?.per_key_rate_limit ?? null,
    rate_period_ms: q[0]?.per_key_rate_period_ms ?? null,
    weight: 1,
    override_concurrency: null,
    override_rate_limit: null,
    override_rate_period_ms: null,
    override_weight: null,
    overridden_at: null,
  };
}

export interface FlowKeyOverride {
  concurrency?: number | null;
  rate?: { limit: number; periodMs: number } | null;
  weight?: number | null;
  paused?: boolean;
}

/**
 * Sets the given fields of a key's override (absent fields keep their value; null returns one to the queue's).
 * Returns whether anything changed.
 */
export async function setFlowKeyOverride(db: Queryable, tenantId: string, queueId: string, key: string, o: FlowKeyOverride): Promise<boolean> {
  const has = (f: keyof FlowKeyOverride) => o[f] !== undefined;
  const { rows } = await db.query<{ changed: boolean }>(
    `WITH before AS (
       SELECT concurrency, rate_limit, rate_period_ms, weight, paused FROM flow_keys WHERE queue_id = $1 AND key = $2
     ), upsert AS (
       INSERT INTO flow_keys AS fk (queue_id, key, tenant_id, concurrency, rate_limit, rate_period_ms, weight, paused, overridden_at, updated_at)
       VALUES ($1, $2, $3, $5, $7, $8, $10, coalesce($12, false), now(), now())
       ON CONFLICT (queue_id, key) DO UPDATE SET
         concurrency = CASE WHEN $4 THEN $5 ELSE fk.concurrency END,
         rate_limit = CASE WHEN $6 THEN $7 ELSE fk.rate_limit END,
         rate_period_ms = CASE WHEN $6 THEN $8 ELSE fk.rate_period_ms END,
         weight = CASE WHEN $9 THEN $10 ELSE fk.weight END,
         paused = CASE WHEN $11 THEN $12 ELSE fk.paused END,
         overridden_at = now(), updated_at = now()
       WHERE fk.tenant_id = $3
       RETURNING concurrency, rate_limit, rate_period_ms, weight, paused
     )
     SELECT NOT EXISTS (SELECT 1 FROM before) OR (SELECT row(b.*) FROM before b) IS DISTINCT FROM (SELECT row(u.*) FROM upsert u) AS changed`,
    [
      queueId,
      key,
      tenantId,
      has("concurrency"),
      o.concurrency ?? null,
      has("rate"),
      o.rate?.limit ?? null,
      o.rate?.periodMs ?? null,
      has("weight"),
      o.weight ?? null,
      has("paused"),
      o.paused ?? null,
    ],
  );
  return rows[0]?.changed ?? false;
}

/** Removes a key's override and pause (the in-flight count stays). Returns whether it had one. */
export async function clearFlowKeyOverride(db: Queryable, tenantId: string, queueId: string, key: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE flow_keys SET concurrency = NULL, rate_limit = NULL, rate_period_ms = NULL, weight = NULL, paused = false, overridden_at = NULL, updated_at = now()
      WHERE queue_id = $1 AND key = $2 AND tenant_id = $3 AND (overridden_at IS NOT NULL OR paused)`,
    [queueId, key, tenantId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * What holds a job that is due but not running, read from the state the claim decides on (waiting.ts in the
 * console turns it into a reason): the tenant's suspension and in-flight cap, the queue's pause, concurrency
 * and rate window, the key's pause, cap, in-flight jobs and bucket, the dependency's pause, and the tenant's due
 * jobs that were due before this one (counted up to 10,001).
 */
export interface WaitingFacts {
  status: string;
  due_in_ms: number;
  now: Date;
  tenant_suspended: boolean;
  tenant_in_flight: number;
  tenant_max_in_flight: number;
  queue_paused: boolean;
  queue_concurrency: number | null;
  queue_in_flight: number;
  queue_rate_per_second: number | null;
  queue_window_used: number;
  dependency_key: string | null;
  dependency_paused: boolean;
  flow_key: string | null;
  key_paused: boolean;
  key_cap: number | null;
  key_in_flight: number;
  key_in_flight_job_ids: string[];
  key_rate_limit: number | null;
  key_rate_period_ms: number | null;
  /** Whole tokens are what the claim takes; null: no bucket yet (full). */
  key_tokens: number | null;
  ahead: number;
}

export async function waitingFacts(db: Queryable, tenantId: string, jobId: string): Promise<WaitingFacts | null> {
  const { rows } = await db.query<WaitingFacts>(
    `SELECT j.status, floor(extract(epoch FROM j.due_at - now()) * 1000)::float8 AS due_in_ms, now() AS now,
            t.suspended_at IS NOT NULL AS tenant_suspended, t.max_in_flight AS tenant_max_in_flight,
            (SELECT count(*) FROM jobs f WHERE f.shard = j.shard AND f.status IN ('dispatched', 'running') AND f.tenant_id = j.tenant_id)::int AS tenant_in_flight,
            q.paused AS queue_paused, q.concurrency AS queue_concurrency, q.rate_per_second AS queue_rate_per_second,
            (SELECT count(*) FROM jobs f WHERE f.shard = j.shard AND f.status IN ('dispatched', 'running') AND f.tenant_id = j.tenant_id AND f.queue_id = j.queue_id)::int AS queue_in_flight,
            CASE WHEN q.rate_window_start = date_trunc('second', now()) THEN q.rate_window_count ELSE 0 END AS queue_window_used,
            j.dependency_key,
            EXISTS (SELECT 1 FROM dependency_pauses dp WHERE dp.tenant_id = j.tenant_id AND dp.dependency_key = j.dependency_key) AS dependency_paused,
            j.flow_key, coalesce(fk.paused, false) AS key_paused,
            coalesce(fk.concurrency, q.per_key_concurrency) AS key_cap, coalesce(fk.in_flight, 0) AS key_in_flight,
            coalesce((SELECT array_agg(f.id ORDER BY f.updated_at) FROM (
               SELECT f.id, f.updated_at FROM jobs f WHERE f.queue_id = j.queue_id AND f.flow_key = j.flow_key AND f.status IN ('dispatched', 'running') LIMIT 20) f), '{}') AS key_in_flight_job_ids,
            ${KEY_RATE_LIMIT} AS key_rate_limit,
            ${KEY_RATE_PERIOD_MS} AS key_rate_period_ms,
            CASE WHEN b.tokens IS NULL THEN NULL
                 WHEN ${KEY_RATE_LIMIT} IS NULL THEN NULL
                 ELSE ${bucketTokens("b", KEY_RATE_LIMIT, KEY_RATE_PERIOD_MS, "now()")}
            END AS key_tokens,
            (SELECT count(*) FROM (SELECT 1 FROM jobs a WHERE a.shard = j.shard AND a.tenant_id = j.tenant_id AND a.status = 'scheduled'
                                     AND a.due_at < j.due_at LIMIT 10001) a)::int AS ahead
       FROM jobs j
       JOIN tenants t ON t.id = j.tenant_id
       JOIN queues q ON q.id = j.queue_id
       LEFT JOIN flow_keys fk ON fk.queue_id = j.queue_id AND fk.key = j.flow_key
       LEFT JOIN flow_key_buckets b ON b.queue_id = j.queue_id AND b.key = j.flow_key
      WHERE j.tenant_id = $1 AND j.id = $2`,
    [tenantId, jobId],
  );
  return rows[0] ?? null;
}

/**
 * Forgets the state of keys that no longer need it, at most `limit` rows each: flow_keys rows with nothing in
 * flight and no override or pause (the trigger makes a row again when the key's next job is claimed), and
 * token buckets full again (a key with no bucket has a full one). Returns the rows deleted.
 *
 * Each DELETE repeats its condition on the row itself, outside the IN list: a row a concurrent statement
 * changed after this one's snapshot is judged again in its committed version, and only conditions on the row
 * are. A bucket a claim spent meanwhile (tokens_at now) is kept; deleted, the next claim would find the key's
 * bucket full and take a second burst at once.
 */
export async function pruneIdleFlowKeys(db: Queryable, limit: number): Promise<number> {
  const fullSince = (b: string) =>
    `${b}.tokens_at < now() - make_interval(secs => coalesce((
       SELECT ${KEY_RATE_PERIOD_MS}
         FROM queues q LEFT JOIN flow_keys fk ON fk.queue_id = q.id AND fk.key = ${b}.key
        WHERE q.id = ${b}.queue_id), 0) / 1000.0)`;
  const { rows } = await db.query<{ n: number }>(
    `WITH idle AS (
       DELETE FROM flow_keys WHERE (queue_id, key) IN (
         SELECT queue_id, key FROM flow_keys WHERE in_flight = 0 AND overridden_at IS NULL AND NOT paused LIMIT $1)
         AND in_flight = 0 AND overridden_at IS NULL AND NOT paused
       RETURNING 1
     ), full_buckets AS (
       DELETE FROM flow_key_buckets fb WHERE (fb.queue_id, fb.key) IN (
         SELECT b.queue_id, b.key FROM flow_key_buckets b WHERE ${fullSince("b")} LIMIT $1)
         AND ${fullSince("fb")}
       RETURNING 1
     )
     SELECT ((SELECT count(*) FROM idle) + (SELECT count(*) FROM full_buckets))::int AS n`,
    [limit],
  );
  return rows[0]?.n ?? 0;
}

export interface FlowKeyHold {
  reason: "key_paused" | "key_at_cap" | "key_over_rate";
  keys: number;
  jobs: number;
}

/**
 * Across the deployment: due keyed jobs held by their key's limits, by reason (a paused key, a key at its
 * concurrency, a key whose bucket is empty), with how many keys hold them. Reads only keys with state (paused,
 * something in flight, a bucket), never every key.
 */
export async function flowKeyHolds(db: Queryable): Promise<FlowKeyHold[]> {
  const { rows } = await db.query<FlowKeyHold>(
    `WITH state AS (
       SELECT q.id AS queue_id, k.key,
              coalesce(fk.paused, false) AS paused,
              coalesce(fk.in_flight, 0) >= coalesce(fk.concurrency, q.per_key_concurrency) AS at_cap,
              b.tokens IS NOT NULL AND ${bucketTokens("b", KEY_RATE_LIMIT, `nullif(${KEY_RATE_PERIOD_MS}, 0)`, "now()")} < 1 AS over_rate
         FROM (SELECT queue_id, key FROM flow_keys WHERE paused OR in_flight > 0 UNION SELECT queue_id, key FROM flow_key_buckets) k
         JOIN queues q ON q.id = k.queue_id
         LEFT JOIN flow_keys fk ON fk.queue_id = k.queue_id AND fk.key = k.key
         LEFT JOIN flow_key_buckets b ON b.queue_id = k.queue_id AND b.key = k.key
     ), held AS (
       SELECT CASE WHEN s.paused THEN 'key_paused' WHEN s.at_cap THEN 'key_at_cap' WHEN s.over_rate THEN 'key_over_rate' END AS reason,
              (SELECT count(*) FROM jobs j WHERE j.queue_id = s.queue_id AND j.flow_key = s.key AND j.status = 'scheduled'
                 AND j.flow_key IS NOT NULL AND j.due_at <= now())::int AS jobs
         FROM state s WHERE s.paused OR s.at_cap OR s.over_rate
     )
     SELECT reason, count(*) FILTER (WHERE jobs > 0)::int AS keys, coalesce(sum(jobs), 0)::int AS jobs FROM held GROUP BY reason`,
  );
  return rows;
}
