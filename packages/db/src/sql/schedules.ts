// Recurring schedules (S2, S12, S14): the materialiser locks due schedules of a shard, creates their
// occurrence jobs and advances them, all inside the shard-fenced transaction.
import { JOB_STATUS_WRITES, stateLiteral } from "./job-status-writes.js";
import type { Queryable } from "./types.js";

export interface ScheduleRow {
  id: string;
  tenant_id: string;
  queue_id: string;
  shard: number;
  name: string;
  cron: string;
  timezone: string;
  dst_gap_policy: "shift_forward" | "skip";
  dst_overlap_policy: "first" | "last" | "both";
  misfire_policy: "skip" | "run_latest" | "catch_up";
  max_catch_up: number;
  misfire_threshold_ms: number;
  job_template: Record<string, unknown>;
  next_fire_at: Date | null;
  last_fire_at: Date | null;
  paused: boolean;
  version: number;
  created_at: Date;
  db_now: Date;
}

/** Active schedules of a shard whose next fire time is within `lookaheadMs` (database time). */
export async function lockDueSchedules(db: Queryable, shard: number, lookaheadMs: number, limit: number): Promise<ScheduleRow[]> {
  const { rows } = await db.query<ScheduleRow>(
    `SELECT s.*, now() AS db_now FROM schedules s
      WHERE s.shard = $1 AND NOT s.paused AND s.next_fire_at IS NOT NULL
        AND s.next_fire_at <= now() + make_interval(secs => $2 / 1000.0)
      ORDER BY s.next_fire_at LIMIT $3
      FOR UPDATE SKIP LOCKED`,
    [shard, lookaheadMs, limit],
  );
  return rows;
}

/**
 * Which of these shards have a schedule to materialise (the same condition as lockDueSchedules, unlocked):
 * a cheap look across all held shards, so shards with nothing due cost no fenced transaction.
 */
export async function shardsWithDueSchedules(db: Queryable, shards: number[], lookaheadMs: number): Promise<Set<number>> {
  if (shards.length === 0) return new Set();
  const { rows } = await db.query<{ shard: number }>(
    `SELECT DISTINCT shard FROM schedules
      WHERE shard = ANY($1::int[]) AND NOT paused AND next_fire_at IS NOT NULL
        AND next_fire_at <= now() + make_interval(secs => $2 / 1000.0)`,
    [shards, lookaheadMs],
  );
  return new Set(rows.map((r) => r.shard));
}

export interface OccurrenceJob {
  id: string;
  dueAt: Date;
  occurrenceAt: Date;
  idempotencyKey: string;
  metadata: Record<string, unknown>;
}

/**
 * Creates one job per occurrence from the schedule's template. The unique (schedule_id, occurrence_at)
 * and (tenant_id, idempotency_key) constraints make a second materialisation (another scheduler, a
 * stale one) a no-op. Returns how many were created.
 */
export async function insertOccurrenceJobs(db: Queryable, schedule: ScheduleRow, jobs: OccurrenceJob[], idempotencyTtlMs: number): Promise<number> {
  if (jobs.length === 0) return 0;
  const t = schedule.job_template as {
    target: { method?: string; url: string; headers?: Record<string, string>; body?: string | null; timeoutMs?: number };
    priority?: number;
    maxAttempts?: number;
    backoff?: unknown;
    callbackUrl?: string | null;
    dependencyKey?: string | null;
    metadata?: Record<string, unknown>;
    expiresAfterMs?: number | null;
  };
  const { rowCount } = await db.query(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, version, due_at, expires_at, priority, idempotency_key, request_hash,
                       idempotency_expires_at, method, url, headers, body, timeout_ms, max_attempts, backoff, dependency_key,
                       callback_url, metadata, schedule_id, occurrence_at, updated_at)
     SELECT x.id, $1, q.id, $2, ${stateLiteral(JOB_STATUS_WRITES.insertOccurrenceJobs.creates)}, 1, x.due_at,
            CASE WHEN $13::float8 IS NULL THEN NULL ELSE x.due_at + make_interval(secs => $13 / 1000.0) END,
            $4, x.idempotency_key, 'schedule', now() + make_interval(secs => $14 / 1000.0),
            $5, $6, $7::jsonb, $8, coalesce($9, q.default_timeout_ms), coalesce($10, q.default_max_attempts), coalesce($11::jsonb, q.default_backoff),
            $12, $15, x.metadata, $16, x.occurrence_at, now()
       FROM jsonb_to_recordset($17::jsonb) AS x(id uuid, due_at timestamptz, occurrence_at timestamptz, idempotency_key text, metadata jsonb)
       JOIN queues q ON q.id = $3
     ON CONFLICT DO NOTHING`,
    [
      schedule.tenant_id,
      schedule.shard,
      schedule.queue_id,
      t.priority ?? 0,
      t.target.method ?? "POST",
      t.target.url,
      JSON.stringify(t.target.headers ?? {}),
      t.target.body ?? null,
      t.target.timeoutMs ?? null,
      t.maxAttempts ?? null,
      t.backoff ? JSON.stringify(t.backoff) : null,
      t.dependencyKey ?? null,
      t.expiresAfterMs ?? null,
      idempotencyTtlMs,
      t.callbackUrl ?? null,
      schedule.id,
      JSON.stringify(jobs.map((j) => ({ id: j.id, due_at: j.dueAt, occurrence_at: j.occurrenceAt, idempotency_key: j.idempotencyKey, metadata: { ...(t.metadata ?? {}), ...j.metadata } }))),
    ],
  );
  return rowCount ?? 0;
}

/** Moves a schedule on after materialising, conditional on the version read. */
export async function advanceSchedule(db: Queryable, id: string, version: number, nextFireAt: Date | null, lastFireAt: Date | null): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE schedules SET next_fire_at = $3, last_fire_at = coalesce($4, last_fire_at), version = version + 1, updated_at = now()
      WHERE id = $1 AND version = $2`,
    [id, version, nextFireAt, lastFireAt],
  );
  return (rowCount ?? 0) > 0;
}
