// Per-minute rollups for the console's overview charts. The scheduler's maintenance loop writes them
// as it works: every finished job counted once into job_minute_stats (by the holder of its shard, behind the
// shard's rollup watermark), and each queue's live figures sampled once a minute into queue_minute_gauges.
// GET /api/v1/stats reads them, so a page view costs the window's rollup rows, never a scan of job history.
import { LAG_BUCKET_BOUNDS_MS, LAG_BUCKET_COUNT } from "@tick/core";
import { probeShards, type ProbeResult, type ShardProbe } from "./shard-leases.js";
import type { Queryable } from "./types.js";

/**
 * How long after its finish a job is rolled up. A completion's finished_at is its transaction's start
 * (`now()`), so a job committing after the watermark passed its finished_at would be missed; this margin
 * covers every completion that commits within 5 s of starting.
 */
export const ROLLUP_SETTLE_MS = 5_000;

const FINISHED_BY_INDEX = [
  // Each select matches one partial index on (shard, finished_at): jobs_finished_idx, jobs_dead_age_idx.
  `j.status IN ('succeeded', 'cancelled', 'expired', 'rate_limited')`,
  `j.status = 'dead'`,
];

/**
 * Which of these shards have finished jobs not rolled up yet (finished at or after the shard's mark and
 * more than ROLLUP_SETTLE_MS ago), or no mark yet; and which leases are stale. Read-only, one statement.
 */
export function shardsToRollUp(db: Queryable, holder: string, leases: readonly ShardProbe[]): Promise<ProbeResult> {
  const pending = FINISHED_BY_INDEX.map(
    (status) => `EXISTS (SELECT 1 FROM jobs j WHERE j.shard = s.shard AND ${status} AND j.finished_at >= w.through
                           AND j.finished_at < now() - make_interval(secs => $4 / 1000.0))`,
  ).join(" OR ");
  return probeShards(
    db,
    holder,
    leases,
    `NOT EXISTS (SELECT 1 FROM rollup_watermarks w WHERE w.shard = s.shard)
     OR EXISTS (SELECT 1 FROM rollup_watermarks w WHERE w.shard = s.shard AND (${pending}))`,
    [ROLLUP_SETTLE_MS],
  );
}

/**
 * Locks the shard's rollup watermark for this transaction and returns it; a shard without one starts at
 * now() − ROLLUP_SETTLE_MS (jobs that finished before the first rollup are not counted). An upsert, so the
 * first two rollups of a shard cannot both insert, and the second waits for the first and sees its mark.
 */
export async function lockRollupWatermark(db: Queryable, shard: number): Promise<Date> {
  const { rows } = await db.query<{ through: Date }>(
    `INSERT INTO rollup_watermarks (shard, through) VALUES ($1, now() - make_interval(secs => $2 / 1000.0))
     ON CONFLICT (shard) DO UPDATE SET through = rollup_watermarks.through
     RETURNING through`,
    [shard, ROLLUP_SETTLE_MS],
  );
  return rows[0]!.through;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
/** Postgres' width_bucket(lag, bounds) numbers the buckets 0..LAG_BUCKET_COUNT−1, as lagBucket does. */
const LAG_HISTOGRAM = `ARRAY[${range(LAG_BUCKET_COUNT).map((i) => `count(*) FILTER (WHERE bucket = ${i})`).join(", ")}]::int[]`;

/**
 * Counts the shard's finished jobs with finished_at in [through, hi) into job_minute_stats and moves the
 * shard's watermark to hi, in one statement; run it in the transaction that locked the watermark
 * (lockRollupWatermark), fenced by the shard lease. hi = least(now() − ROLLUP_SETTLE_MS, the finish of the
 * (batch+1)-th job from `through`), so one statement reads at most `batch` jobs (more only when more than
 * `batch` finished in the same millisecond) and never steps through an idle stretch.
 *
 * Exactly once: a job is counted when the mark passes its finished_at, and the mark moves only forward, in
 * the transaction that counts; the archiver moves a job to history only once it is below the mark. The one
 * way a job is missed: a completion whose transaction began (its finished_at) before hi but committed more
 * than ROLLUP_SETTLE_MS later, after the mark passed it. That affects the counts only, never the job.
 *
 * Rows are read from the hot table through the partial indexes on (shard, finished_at), one select per
 * index. Lag is the finishing attempt's start − the job's due time, for succeeded and dead jobs whose last
 * attempt started; the finishing attempt is the one with the job's fencing token (the completion clears
 * current_attempt_id), found through the (job_id, fencing_token) unique index.
 */
export async function rollUpFinishedJobs(db: Queryable, shard: number, through: Date, batch: number): Promise<{ jobs: number; rows: number; through: Date }> {
  const finished = (cols: string, extra: string) =>
    FINISHED_BY_INDEX.map((status) => `(SELECT ${cols} FROM jobs j WHERE j.shard = $1 AND ${status} AND j.finished_at >= $2 ${extra})`).join(
      " UNION ALL ",
    );
  const { rows } = await db.query<{ jobs: number; rows: number; through: Date }>(
    `WITH next AS (
       SELECT finished_at FROM (${finished("j.finished_at", "ORDER BY j.finished_at LIMIT $3::int + 1")}) x
        ORDER BY finished_at OFFSET $3 LIMIT 1
     ), bound AS (
       SELECT GREATEST($2::timestamptz, LEAST(now() - make_interval(secs => $4 / 1000.0),
                GREATEST(COALESCE((SELECT finished_at FROM next), 'infinity'), $2::timestamptz + interval '1 millisecond'))) AS hi
     ), done AS (
       ${finished("j.id, j.tenant_id, j.queue_id, j.dependency_key, j.status, j.due_at, j.finished_at, j.fencing_token", "AND j.finished_at < (SELECT hi FROM bound)")}
     ), lagged AS (
       SELECT d.*, CASE WHEN d.status IN ('succeeded', 'dead') AND a.started_at IS NOT NULL
                        THEN width_bucket(extract(epoch FROM a.started_at - d.due_at)::float8 * 1000, $5::float8[]) END AS bucket
         FROM done d LEFT JOIN attempts a ON a.job_id = d.id AND a.fencing_token = d.fencing_token
     ), grouped AS (
       SELECT tenant_id, date_bin('1 minute', finished_at, timestamptz '1970-01-01 00:00:00+00') AS minute, queue_id,
              COALESCE(dependency_key, '') AS dependency_key,
              count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, count(*) FILTER (WHERE status = 'dead')::int AS dead,
              count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled, count(*) FILTER (WHERE status = 'expired')::int AS expired,
              count(*) FILTER (WHERE status = 'rate_limited')::int AS rate_limited,
              ${LAG_HISTOGRAM} AS lag_buckets
         FROM lagged GROUP BY 1, 2, 3, 4
     ), written AS (
       -- In key order, so two writers (a stale leader's last round, say) lock rows in one order.
       INSERT INTO job_minute_stats AS s (shard, tenant_id, minute, queue_id, dependency_key, succeeded, dead, cancelled, expired, rate_limited, lag_buckets)
       SELECT $1, tenant_id, minute, queue_id, dependency_key, succeeded, dead, cancelled, expired, rate_limited, lag_buckets
         FROM grouped ORDER BY tenant_id, minute, queue_id, dependency_key
       ON CONFLICT (tenant_id, minute, queue_id, dependency_key, shard) DO UPDATE SET
              succeeded = s.succeeded + EXCLUDED.succeeded, dead = s.dead + EXCLUDED.dead,
              cancelled = s.cancelled + EXCLUDED.cancelled, expired = s.expired + EXCLUDED.expired,
              rate_limited = s.rate_limited + EXCLUDED.rate_limited,
              lag_buckets = ARRAY(SELECT COALESCE(o, 0) + COALESCE(n, 0)
                                    FROM unnest(s.lag_buckets, EXCLUDED.lag_buckets) WITH ORDINALITY AS u(o, n, i) ORDER BY i)
       RETURNING 1
     ), moved AS (
       UPDATE rollup_watermarks SET through = (SELECT hi FROM bound) WHERE shard = $1 RETURNING through
     )
     SELECT (SELECT count(*) FROM done)::int AS jobs, (SELECT count(*) FROM written)::int AS rows, (SELECT through FROM moved) AS through`,
    [shard, through, batch, ROLLUP_SETTLE_MS, LAG_BUCKET_BOUNDS_MS],
  );
  return rows[0]!;
}

/**
 * Samples the live figures of every queue of the shard's tenants into queue_minute_gauges for the
 * database's current minute (overwriting an earlier sample of that minute): one grouped pass over the
 * tenants' scheduled, dispatched, running and dead jobs. A queue with none gets zeros, so a chart shows an
 * emptied backlog as 0, not as a gap. Returns the rows written, the minute and the database's now.
 */
export async function sampleQueueGauges(db: Queryable, shard: number): Promise<{ rows: number; minute: Date; now: Date }> {
  const { rows } = await db.query<{ rows: number; minute: Date; now: Date }>(
    `WITH live AS (
       SELECT j.queue_id,
              count(*) FILTER (WHERE j.status = 'scheduled' AND j.due_at <= now())::int AS due,
              count(*) FILTER (WHERE j.status = 'scheduled')::int AS waiting,
              count(*) FILTER (WHERE j.status IN ('dispatched', 'running'))::int AS in_flight,
              count(*) FILTER (WHERE j.status = 'dead')::int AS dead,
              floor(extract(epoch FROM now() - min(j.due_at) FILTER (WHERE j.status = 'scheduled' AND j.due_at <= now())) * 1000)::bigint AS oldest_due_age_ms
         FROM (
           -- The shard's live jobs through jobs_live_idx (led by shard and status), its tenants' dead ones
           -- through jobs_dead_idx (led by tenant_id).
           SELECT j.queue_id, j.status, j.due_at FROM jobs j
            WHERE j.shard = $1 AND j.status IN ('scheduled', 'dispatched', 'running')
           UNION ALL
           SELECT j.queue_id, j.status, j.due_at FROM tenants t JOIN jobs j ON j.tenant_id = t.id
            WHERE t.shard = $1 AND j.status = 'dead'
         ) j
        GROUP BY j.queue_id
     ), written AS (
       INSERT INTO queue_minute_gauges AS g (shard, tenant_id, minute, queue_id, due, waiting, in_flight, dead, oldest_due_age_ms)
       SELECT $1, q.tenant_id, date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00'), q.id,
              COALESCE(l.due, 0), COALESCE(l.waiting, 0), COALESCE(l.in_flight, 0), COALESCE(l.dead, 0), l.oldest_due_age_ms
         FROM tenants t JOIN queues q ON q.tenant_id = t.id LEFT JOIN live l ON l.queue_id = q.id
        WHERE t.shard = $1
        ORDER BY q.tenant_id, q.id
       ON CONFLICT (tenant_id, minute, queue_id, shard) DO UPDATE SET
              due = EXCLUDED.due, waiting = EXCLUDED.waiting, in_flight = EXCLUDED.in_flight, dead = EXCLUDED.dead,
              oldest_due_age_ms = EXCLUDED.oldest_due_age_ms
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM written)::int AS rows, date_bin('1 minute', now(), timestamptz '1970-01-01 00:00:00+00') AS minute, now() AS now`,
    [shard],
  );
  return rows[0]!;
}

/**
 * Deletes rollup rows (and breaker openings, by the tenant whose job opened them) of the shard's tenants older
 * than greatest(the tenant's retention capped at `maxDays`, 8) days (the longest chart window is 7 days), at
 * most `batch` rows of each table. Returns the rows deleted.
 */
export async function pruneRollups(db: Queryable, shard: number, maxDays: number, batch: number): Promise<number> {
  const expired = (table: string, key: string, at = "minute") =>
    `SELECT x.* FROM tenants t CROSS JOIN LATERAL (
       SELECT ${key} FROM ${table} r
        WHERE r.tenant_id = t.id AND r.${at} < now() - make_interval(days => GREATEST(LEAST(t.retention_days, $2), 8))
        LIMIT $3
     ) x WHERE t.shard = $1 LIMIT $3`;
  const statsKey = "r.tenant_id, r.minute, r.queue_id, r.dependency_key, r.shard";
  const gaugeKey = "r.tenant_id, r.minute, r.queue_id, r.shard";
  const { rows } = await db.query<{ n: number }>(
    `WITH stats AS (
       DELETE FROM job_minute_stats s USING (${expired("job_minute_stats", statsKey)}) e
        WHERE (s.tenant_id, s.minute, s.queue_id, s.dependency_key, s.shard) = (e.tenant_id, e.minute, e.queue_id, e.dependency_key, e.shard)
       RETURNING 1
     ), gauges AS (
       DELETE FROM queue_minute_gauges g USING (${expired("queue_minute_gauges", gaugeKey)}) e
        WHERE (g.tenant_id, g.minute, g.queue_id, g.shard) = (e.tenant_id, e.minute, e.queue_id, e.shard)
       RETURNING 1
     ), openings AS (
       DELETE FROM breaker_openings o USING (${expired("breaker_openings", "r.id", "opened_at")}) e
        WHERE o.id = e.id
       RETURNING 1
     )
     SELECT ((SELECT count(*) FROM stats) + (SELECT count(*) FROM gauges) + (SELECT count(*) FROM openings))::int AS n`,
    [shard, maxDays, batch],
  );
  return rows[0]!.n;
}

// Read side: GET /api/v1/stats. Every statement reads one tenant's rows of the window through the primary
// keys' (tenant_id, minute) prefix, so its cost follows the window, not the tenant's history.

const BIN = `date_bin(make_interval(secs => $4), minute, timestamptz '1970-01-01 00:00:00+00')`;

export interface JobStatsBinRow {
  bin: Date;
  succeeded: number;
  dead: number;
  cancelled: number;
  expired: number;
  rate_limited: number;
  /** The merged lag histogram of the bin (LAG_BUCKET_BOUNDS_MS). */
  lag_buckets: number[];
}

/** Finished jobs per bin of `binSeconds` in [from, to), summed over queues, dependencies and shards; bins without rows are absent. */
export async function jobStatsByBin(db: Queryable, tenantId: string, from: Date, to: Date, binSeconds: number): Promise<JobStatsBinRow[]> {
  const merged = `ARRAY[${range(LAG_BUCKET_COUNT).map((i) => `COALESCE(sum(lag_buckets[${i + 1}]), 0)`).join(", ")}]::int[]`;
  const { rows } = await db.query<JobStatsBinRow>(
    `SELECT ${BIN} AS bin, sum(succeeded)::int AS succeeded, sum(dead)::int AS dead, sum(cancelled)::int AS cancelled,
            sum(expired)::int AS expired, sum(rate_limited)::int AS rate_limited, ${merged} AS lag_buckets
       FROM job_minute_stats WHERE tenant_id = $1 AND minute >= $2 AND minute < $3
      GROUP BY 1 ORDER BY 1`,
    [tenantId, from, to, binSeconds],
  );
  return rows;
}

export interface DependencyStatsBinRow {
  dependency_key: string;
  bin: Date;
  finished: number;
  dead: number;
}

/** The `limit` dependencies (not '') with the most finished jobs in [from, to), per bin: finished (every outcome) and dead. */
export async function topDependencyStatsByBin(db: Queryable, tenantId: string, from: Date, to: Date, binSeconds: number, limit: number): Promise<DependencyStatsBinRow[]> {
  const { rows } = await db.query<DependencyStatsBinRow>(
    `WITH w AS (
       SELECT ${BIN} AS bin, dependency_key, succeeded + dead + cancelled + expired + rate_limited AS finished, dead
         FROM job_minute_stats WHERE tenant_id = $1 AND minute >= $2 AND minute < $3 AND dependency_key <> ''
     ), top AS (
       SELECT dependency_key, sum(finished) AS total FROM w GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $5
     )
     SELECT w.dependency_key, w.bin, sum(w.finished)::int AS finished, sum(w.dead)::int AS dead
       FROM w JOIN top USING (dependency_key)
      GROUP BY w.dependency_key, w.bin, top.total ORDER BY top.total DESC, w.dependency_key, w.bin`,
    [tenantId, from, to, binSeconds, limit],
  );
  return rows;
}

export interface QueueGaugeBinRow {
  queue: string;
  bin: Date;
  due: number;
  waiting: number;
  in_flight: number;
  dead: number;
  oldest_due_age_ms: number | null;
}

/**
 * Each queue's gauges per bin: per minute summed over shards (the oldest due age: the largest), then the
 * bin's last sampled minute. Queues and bins without a sample are absent.
 */
export async function queueGaugesByBin(db: Queryable, tenantId: string, from: Date, to: Date, binSeconds: number): Promise<QueueGaugeBinRow[]> {
  const { rows } = await db.query<QueueGaugeBinRow>(
    `WITH m AS (
       SELECT minute, queue_id, sum(due)::int AS due, sum(waiting)::int AS waiting, sum(in_flight)::int AS in_flight,
              sum(dead)::int AS dead, max(oldest_due_age_ms)::float8 AS oldest_due_age_ms
         FROM queue_minute_gauges WHERE tenant_id = $1 AND minute >= $2 AND minute < $3
        GROUP BY minute, queue_id
     ), last AS (
       SELECT DISTINCT ON (queue_id, ${BIN}) ${BIN} AS bin, * FROM m ORDER BY queue_id, ${BIN}, minute DESC
     )
     SELECT q.name AS queue, l.bin, l.due, l.waiting, l.in_flight, l.dead, l.oldest_due_age_ms
       FROM last l JOIN queues q ON q.id = l.queue_id
      ORDER BY q.name, l.bin`,
    [tenantId, from, to, binSeconds],
  );
  return rows;
}
