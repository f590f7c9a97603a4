// Data lifecycle: finished work leaves the hot tables, history is dropped by partition, and
// what is left to prune is pruned in bounded batches. The scheduler's maintenance loop runs these, each
// inside a fenced transaction like every other scheduler write (see docs/architecture.md, "Data lifecycle").
import type { JobRow } from "./jobs.js";
import { probeShards, type ProbeResult, type ShardProbe } from "./shard-leases.js";
import type { Queryable } from "./types.js";

/** Every job, live or moved to history: reads that may meet a finished job use this view. */
export const JOBS_ALL = "history.jobs_all";
/** Every attempt, live or moved to history. */
export const ATTEMPTS_ALL = "history.attempts_all";

/**
 * A job's columns, in history's order. The hot table has the same columns in another order (what the hot path
 * changes last, so a new row version on the same page logs only those bytes), so copying between them, or a union
 * of both, names them.
 */
export const JOB_COLUMNS = `id, tenant_id, queue_id, shard, status, version, due_at, expires_at, priority, idempotency_key, request_hash,
              idempotency_expires_at, method, url, headers, body, timeout_ms, attempt_count, max_attempts, backoff, fencing_token,
              current_attempt_id, dependency_key, callback_url, metadata, last_error, result, schedule_id, occurrence_at, replay_id,
              cancel_requested_at, created_at, updated_at, finished_at, traceparent, tracestate, flow_key, debounce_key`;
const NOT_HELD_BY_A_REPLAY = `NOT EXISTS (SELECT 1 FROM dlq_replay_items i WHERE i.job_id = j.id AND i.outcome IS NULL)`;
/** Counted by the shard's per-minute rollup (sql/rollups.ts) already; `shard` is the SQL naming the shard. */
const ROLLED_UP = (shard: string) => `j.finished_at < (SELECT w.through FROM rollup_watermarks w WHERE w.shard = ${shard})`;

/**
 * Finished jobs of a shard due to leave the hot table, oldest first, locked (SKIP LOCKED: a job someone
 * else is changing waits for the next round): succeeded, cancelled and expired jobs finished more than
 * `graceMs` ago, and dead jobs past their tenant's DLQ retention. A job an unsettled DLQ replay still
 * watches stays until the replay has recorded its outcome, and every job stays until the shard's rollup
 * has counted it (finished before the shard's rollup watermark; no watermark yet: nothing moves).
 */
export async function lockArchivableJobs(db: Queryable, shard: number, graceMs: number, batch: number): Promise<{ id: string; day: string }[]> {
  const { rows } = await db.query<{ id: string; day: string }>(
    `WITH done AS (
       SELECT j.id, j.finished_at FROM jobs j
        WHERE j.shard = $1 AND j.status IN ('succeeded', 'cancelled', 'expired', 'rate_limited')
          AND j.finished_at < now() - make_interval(secs => $2 / 1000.0) AND ${ROLLED_UP("$1")} AND ${NOT_HELD_BY_A_REPLAY}
        ORDER BY j.finished_at LIMIT $3 FOR UPDATE OF j SKIP LOCKED
     ), dead AS (
       SELECT j.id, j.finished_at FROM jobs j JOIN tenants t ON t.id = j.tenant_id
        WHERE j.shard = $1 AND j.status = 'dead'
          AND j.finished_at < now() - make_interval(days => 1)
          AND j.finished_at < now() - make_interval(days => t.dlq_retention_days) AND ${ROLLED_UP("$1")} AND ${NOT_HELD_BY_A_REPLAY}
        ORDER BY j.finished_at LIMIT $3 FOR UPDATE OF j SKIP LOCKED
     )
     SELECT id, to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM (SELECT * FROM done UNION ALL SELECT * FROM dead) x`,
    [shard, graceMs, batch],
  );
  return rows.slice(0, batch);
}

/**
 * Which of these shards have finished jobs to move to history (a superset of what lockArchivableJobs
 * takes: a job a replay still watches counts here; one the rollup has not counted yet does not), and which
 * leases are stale. Read-only, one statement
 * for all shards (a fenced transaction per shard and round would find nothing on almost every one).
 */
export function shardsToArchive(db: Queryable, holder: string, leases: readonly ShardProbe[], graceMs: number): Promise<ProbeResult> {
  return probeShards(
    db,
    holder,
    leases,
    `EXISTS (SELECT 1 FROM jobs j WHERE j.shard = s.shard AND j.status IN ('succeeded', 'cancelled', 'expired', 'rate_limited')
              AND j.finished_at < now() - make_interval(secs => $4 / 1000.0) AND ${ROLLED_UP("s.shard")})
     OR EXISTS (SELECT 1 FROM jobs j JOIN tenants t ON t.id = j.tenant_id
              WHERE j.shard = s.shard AND j.status = 'dead' AND j.finished_at < now() - make_interval(days => 1)
                AND j.finished_at < now() - make_interval(days => t.dlq_retention_days) AND ${ROLLED_UP("s.shard")})`,
    [graceMs],
  );
}

/** Which of these shards' tenants have history past retention that pruneHistoryOfShard would delete. */
export function shardsToPrune(db: Queryable, holder: string, leases: readonly ShardProbe[], maxDays: number): Promise<ProbeResult> {
  return probeShards(
    db,
    holder,
    leases,
    `EXISTS (SELECT 1 FROM tenants t JOIN LATERAL (
               SELECT 1 FROM history.jobs h
                WHERE h.tenant_id = t.id AND h.finished_at < now() - make_interval(days => LEAST(t.retention_days, $4))
                  AND (h.idempotency_expires_at IS NULL OR h.idempotency_expires_at <= now())
                  AND (NOT t.export_before_prune OR h.finished_at < t.exported_through)
                LIMIT 1) h ON true
              WHERE t.shard = s.shard)`,
    [maxDays],
  );
}

/** Creates the day partitions of history for these UTC days ("YYYY-MM-DD") if missing. */
export async function ensureHistoryPartitionsFor(db: Queryable, days: string[]): Promise<number> {
  let created = 0;
  for (const day of new Set(days)) {
    const { rows } = await db.query<{ n: number }>(`SELECT history.ensure_partitions($1::date, 1) AS n`, [day]);
    created += rows[0]!.n;
  }
  return created;
}

/**
 * Creates history's day partitions from `daysBack` days ago to `daysAhead` days ahead (UTC), so the
 * moves of the coming days never wait for DDL. Two schedulers creating the same partition at once: the
 * loser's error is a no-op (the partition exists), reported as 0 created.
 */
export async function ensureHistoryPartitions(db: Queryable, daysBack: number, daysAhead: number): Promise<number> {
  try {
    const { rows } = await db.query<{ n: number }>(
      `SELECT history.ensure_partitions(((now() AT TIME ZONE 'UTC')::date - $1::int), $1::int + $2::int + 1) AS n`,
      [daysBack, daysAhead],
    );
    return rows[0]!.n;
  } catch (err) {
    if (["42P07", "23505"].includes((err as { code?: string }).code ?? "")) return 0;
    throw err;
  }
}

/**
 * Moves jobs (locked by lockArchivableJobs in this transaction) and all their attempts from the hot
 * tables into history, in one statement: they are in exactly one place at every instant any reader
 * can see. Returns the jobs and attempts moved.
 */
export async function moveJobsToHistory(db: Queryable, jobIds: string[]): Promise<{ jobs: number; attempts: number }> {
  if (jobIds.length === 0) return { jobs: 0, attempts: 0 };
  const { rows } = await db.query<{ jobs: number; attempts: number }>(
    `WITH moved AS (
       DELETE FROM jobs WHERE id = ANY($1::uuid[]) AND finished_at IS NOT NULL
         AND status IN ('succeeded', 'cancelled', 'expired', 'rate_limited', 'dead')
       RETURNING *
     ), moved_attempts AS (
       DELETE FROM attempts a USING moved m WHERE a.job_id = m.id RETURNING a.*, m.finished_at AS job_finished_at
     ), kept_attempts AS (
       -- By name: history.attempts has job_finished_at before some of attempts' columns (message_id).
       INSERT INTO history.attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id,
              lease_expires_at, heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms,
              late_completions, job_finished_at, message_id, claimed_at)
       SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id,
              lease_expires_at, heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms,
              late_completions, job_finished_at, message_id, claimed_at
         FROM moved_attempts RETURNING 1
     ), kept_jobs AS (
       INSERT INTO history.jobs (${JOB_COLUMNS}) SELECT ${JOB_COLUMNS} FROM moved RETURNING 1
     )
     SELECT (SELECT count(*) FROM kept_jobs)::int AS jobs, (SELECT count(*) FROM kept_attempts)::int AS attempts`,
    [jobIds],
  );
  return rows[0]!;
}

/**
 * Deletes history of the shard's tenants older than each tenant's retention (capped at `maxDays`), at
 * most `batch` jobs with their attempts. A job whose idempotency key is still inside its promised window
 * is kept, so a replay of the request still finds it; so is a job of a tenant that asked for export
 * before delete and has not exported it yet (the deployment's ceiling still drops it with its partition).
 */
export async function pruneHistoryOfShard(db: Queryable, shard: number, maxDays: number, batch: number): Promise<{ jobs: number; attempts: number }> {
  const { rows } = await db.query<{ jobs: number; attempts: number }>(
    `WITH expired AS (
       SELECT h.id, h.finished_at FROM tenants t
        CROSS JOIN LATERAL (
          SELECT h.id, h.finished_at FROM history.jobs h
           WHERE h.tenant_id = t.id AND h.finished_at < now() - make_interval(days => LEAST(t.retention_days, $2))
             AND (h.idempotency_expires_at IS NULL OR h.idempotency_expires_at <= now())
             AND (NOT t.export_before_prune OR h.finished_at < t.exported_through)
           LIMIT $3
        ) h
        WHERE t.shard = $1
        LIMIT $3
     ), gone_attempts AS (
       DELETE FROM history.attempts a USING expired e WHERE a.job_id = e.id AND a.job_finished_at = e.finished_at RETURNING 1
     ), gone AS (
       DELETE FROM history.jobs h USING expired e WHERE h.id = e.id AND h.finished_at = e.finished_at RETURNING 1
     )
     SELECT (SELECT count(*) FROM gone)::int AS jobs, (SELECT count(*) FROM gone_attempts)::int AS attempts`,
    [shard, maxDays, batch],
  );
  return rows[0]!;
}

/** Drops history's day partitions that hold nothing younger than `maxDays` (every tenant's retention). */
export async function dropExpiredHistoryPartitions(db: Queryable, maxDays: number): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT history.drop_partitions_before(now() - make_interval(days => $1)) AS name`,
    [maxDays],
  );
  return rows.map((r) => r.name);
}

/** Releases idempotency keys whose promised window has passed (at most `batch`). */
export async function pruneIdempotencyKeys(db: Queryable, batch: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys k USING (
       SELECT tenant_id, key FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
     ) x WHERE k.tenant_id = x.tenant_id AND k.key = x.key`,
    [batch],
  );
  return rowCount ?? 0;
}

/** Deletes outbox rows published more than `graceMs` ago (at most `batch`, oldest first). */
export async function prunePublishedOutbox(db: Queryable, graceMs: number, batch: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM outbox o USING (
       SELECT id FROM outbox WHERE published_at < now() - make_interval(secs => $1 / 1000.0) ORDER BY id LIMIT $2
     ) x WHERE o.id = x.id`,
    [graceMs, batch],
  );
  return rowCount ?? 0;
}

/** Deletes delivered and failed webhook deliveries older than their tenant's retention (at most `batch`). */
export async function pruneWebhookDeliveries(db: Queryable, maxDays: number, batch: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_deliveries d USING (
       SELECT w.id FROM tenants t
        CROSS JOIN LATERAL (
          SELECT w.id FROM webhook_deliveries w
           WHERE w.tenant_id = t.id AND w.created_at < now() - make_interval(days => LEAST(t.retention_days, $1))
             AND w.status <> 'pending'
           LIMIT $2
        ) w
        LIMIT $2
     ) x WHERE d.id = x.id`,
    [maxDays, batch],
  );
  return rowCount ?? 0;
}

/** Rows waiting for the maintenance loop, counted up to `cap` each (a gauge, cheap however large). */
export async function maintenanceBacklog(db: Queryable, graceMs: number, cap: number): Promise<{ archivable: number; publishedOutbox: number }> {
  const { rows } = await db.query<{ archivable: number; published_outbox: number }>(
    `SELECT (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE status IN ('succeeded', 'cancelled', 'expired', 'rate_limited')
                                     AND finished_at < now() - make_interval(secs => $1 / 1000.0) LIMIT $2) a)::int AS archivable,
            (SELECT count(*) FROM (SELECT 1 FROM outbox WHERE published_at < now() - make_interval(secs => $1 / 1000.0) LIMIT $2) o)::int AS published_outbox`,
    [graceMs, cap],
  );
  return { archivable: rows[0]!.archivable, publishedOutbox: rows[0]!.published_outbox };
}

/** Jobs that finished (succeeded, cancelled, expired, dead) in [from, to), oldest finish first, after a keyset position. */
export async function listFinishedJobs(
  db: Queryable,
  tenantId: string,
  f: { from: Date | null; to: Date; after: { at: Date; id: string } | null; limit: number },
): Promise<JobRow[]> {
  const { rows } = await db.query<JobRow>(
    `SELECT j.*, q.name AS queue_name FROM ${JOBS_ALL} j JOIN queues q ON q.id = j.queue_id
      WHERE j.tenant_id = $1 AND j.status IN ('succeeded', 'cancelled', 'expired', 'rate_limited', 'dead')
        AND j.finished_at >= COALESCE($2::timestamptz, '-infinity') AND j.finished_at < $3
        AND ($4::timestamptz IS NULL OR (j.finished_at, j.id) > ($4, $5::uuid))
      ORDER BY j.finished_at, j.id
      LIMIT $6`,
    [tenantId, f.from, f.to, f.after?.at ?? null, f.after?.id ?? null, f.limit],
  );
  return rows;
}

/** The latest instant an export may cover: a minute before the database's now, so no job finishing at
 * that instant can still be committing. */
export async function exportHorizon(db: Queryable): Promise<Date> {
  const { rows } = await db.query<{ at: Date }>(`SELECT now() - interval '1 minute' AS at`);
  return rows[0]!.at;
}

/**
 * Records a complete export of [from, to): when it joins what was exported before (from is null, the
 * beginning, or at most the current mark), the tenant's exported_through moves up to `to`. Returns the mark.
 */
export async function recordCompleteExport(db: Queryable, tenantId: string, from: Date | null, to: Date): Promise<Date | null> {
  const { rows } = await db.query<{ exported_through: Date | null }>(
    `WITH moved AS (
       UPDATE tenants SET exported_through = GREATEST(COALESCE(exported_through, $3), $3), updated_at = now()
        WHERE id = $1 AND ($2::timestamptz IS NULL OR $2 <= exported_through)
        RETURNING exported_through
     )
     SELECT exported_through FROM moved UNION ALL SELECT exported_through FROM tenants WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM moved)`,
    [tenantId, from, to],
  );
  return rows[0]?.exported_through ?? null;
}

export interface TenantSettingsRow {
  retention_days: number;
  dlq_retention_days: number;
  export_before_prune: boolean;
  exported_through: Date | null;
}

export async function findTenantSettings(db: Queryable, tenantId: string): Promise<TenantSettingsRow | null> {
  const { rows } = await db.query<TenantSettingsRow>(
    `SELECT retention_days, dlq_retention_days, export_before_prune, exported_through FROM tenants WHERE id = $1`,
    [tenantId],
  );
  return rows[0] ?? null;
}

/** Changes the given settings (null: leave as is); returns the settings after the change. */
export async function updateTenantSettings(
  db: Queryable,
  tenantId: string,
  s: { retentionDays: number | null; dlqRetentionDays: number | null; exportBeforePrune: boolean | null },
): Promise<TenantSettingsRow | null> {
  const { rows } = await db.query<TenantSettingsRow>(
    `UPDATE tenants SET retention_days = COALESCE($2, retention_days), dlq_retention_days = COALESCE($3, dlq_retention_days),
            export_before_prune = COALESCE($4, export_before_prune), updated_at = now()
      WHERE id = $1
      RETURNING retention_days, dlq_retention_days, export_before_prune, exported_through`,
    [tenantId, s.retentionDays, s.dlqRetentionDays, s.exportBeforePrune],
  );
  return rows[0] ?? null;
}
