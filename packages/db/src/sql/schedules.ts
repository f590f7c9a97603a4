// Recurring schedules (S2, S12, S14): the materialiser locks due schedules of a shard, creates their
// occurrence jobs and advances them, all inside the shard-fenced transaction.
import { childTraceContext, formatTraceparent } from "@tick/core";
import { JOB_STATUS_WRITES, stateLiteral } from "./job-status-writes.js";
import { derivedJobColumns, templateColumnsSql, type JobTemplate } from "./job-template.js";
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
  job_template: JobTemplate;
  next_fire_at: Date | null;
  /** The materialiser's cursor: occurrences up to here are decided (created, skipped or coalesced). */
  materialized_through: Date | null;
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
  scheduleId: string;
  /**
   * The schedule's job template as read with its locked row; the SQL composes the job's columns from the stored
   * copy, this one gives the columns composed in TypeScript (derivedJobColumns in job-template.ts).
   */
  template: JobTemplate;
  id: string;
  dueAt: Date;
  occurrenceAt: Date;
  idempotencyKey: string;
  /** What the job's metadata says of its occurrence (nominal time, offset, DST, coalesced), beside the template's. */
  occurrence: Record<string, unknown>;
}

/** An occurrence job's template columns, read in SQL from its locked schedule's stored template. */
const OCCURRENCE_TEMPLATE_COLUMNS = templateColumnsSql("s.job_template", "q");

/**
 * Creates the occurrence jobs of many schedules in one statement, each from its schedule's template (read
 * from the schedule row, which the caller holds locked) by the rule an API create follows (job-template.ts).
 * The unique (schedule_id, occurrence_at) and (tenant_id, idempotency_key) constraints make a second
 * materialisation (another scheduler, a stale one) a per-row no-op. Returns how many were created.
 */
export async function insertOccurrenceJobs(db: Queryable, jobs: OccurrenceJob[], idempotencyTtlMs: number): Promise<number> {
  if (jobs.length === 0) return 0;
  // Composed once per template (schedule), however many of its occurrences this round creates.
  const derived = new Map<JobTemplate, ReturnType<typeof derivedJobColumns>>();
  const derive = (template: JobTemplate) => {
    let columns = derived.get(template);
    if (!columns) derived.set(template, (columns = derivedJobColumns(template)));
    return columns;
  };
  const { rowCount } = await db.query(
    `INSERT INTO jobs (id, tenant_id, queue_id, shard, status, version, due_at, expires_at, idempotency_key, request_hash,
                       idempotency_expires_at, ${OCCURRENCE_TEMPLATE_COLUMNS.columns}, dependency_key, metadata, schedule_id,
                       occurrence_at, traceparent, updated_at)
     SELECT x.id, s.tenant_id, q.id, s.shard, ${stateLiteral(JOB_STATUS_WRITES.insertOccurrenceJobs.creates)}, 1, x.due_at,
            CASE WHEN s.job_template->>'expiresAfterMs' IS NULL THEN NULL ELSE x.due_at + make_interval(secs => (s.job_template->>'expiresAfterMs')::float8 / 1000.0) END,
            x.idempotency_key, 'schedule', now() + make_interval(secs => $8 / 1000.0),
            ${OCCURRENCE_TEMPLATE_COLUMNS.values}, x.dependency_key, x.metadata, s.id, x.occurrence_at, x.traceparent, now()
       FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::jsonb[], $7::text[], $9::text[])
              AS x(schedule_id, id, due_at, occurrence_at, idempotency_key, metadata, dependency_key, traceparent)
       JOIN schedules s ON s.id = x.schedule_id
       JOIN queues q ON q.id = s.queue_id
     ON CONFLICT DO NOTHING`,
    [
      jobs.map((j) => j.scheduleId),
      jobs.map((j) => j.id),
      jobs.map((j) => j.dueAt),
      jobs.map((j) => j.occurrenceAt),
      jobs.map((j) => j.idempotencyKey),
      jobs.map((j) => JSON.stringify({ ...derive(j.template).metadata, occurrence: j.occurrence })),
      jobs.map((j) => derive(j.template).dependency_key),
      idempotencyTtlMs,
      // Each occurrence starts a trace of its own. Composed here, not by the column's default (new_traceparent(),
      // about 7 µs a row in SQL against well under 1 in TypeScript).
      jobs.map(() => formatTraceparent(childTraceContext(null))),
    ],
  );
  return rowCount ?? 0;
}

export interface ScheduleAdvance {
  id: string;
  version: number;
  nextFireAt: Date | null;
  /** The materialiser's new cursor: occurrences up to here are decided. */
  materializedThrough: Date | null;
  /** The latest occurrence this round made a job of, if any. */
  lastOccurrenceAt?: Date | null;
}

/**
 * Moves many schedules on after materialising, in one statement, each conditional on the version it
 * was read at. Returns the ids that moved (a lost race is a row missing from the answer).
 */
export async function advanceSchedules(db: Queryable, advances: ScheduleAdvance[]): Promise<Set<string>> {
  if (advances.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `UPDATE schedules s SET next_fire_at = x.next_fire_at, materialized_through = coalesce(x.materialized_through, s.materialized_through),
            last_occurrence_at = greatest(s.last_occurrence_at, x.last_occurrence_at), version = s.version + 1, updated_at = now()
       FROM unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[]) AS x(id, version, next_fire_at, materialized_through, last_occurrence_at)
      WHERE s.id = x.id AND s.version = x.version
      RETURNING s.id`,
    [advances.map((a) => a.id), advances.map((a) => a.version), advances.map((a) => a.nextFireAt), advances.map((a) => a.materializedThrough), advances.map((a) => a.lastOccurrenceAt ?? null)],
  );
  return new Set(rows.map((r) => r.id));
}
