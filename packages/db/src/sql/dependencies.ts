// A tenant's dependencies (S11): the `dependency_key`s its live jobs call, and the ones it paused.
// claimDueJobs (dispatch.ts) holds the jobs of a paused dependency.
import { liveJobsOfTenant } from "./live-jobs.js";
import type { Queryable } from "./types.js";

export interface DependencyRow {
  key: string;
  paused_at: Date | null;
  reason: string | null;
  /** Scheduled and due now. */
  due: number;
  /** Dispatched or running. */
  in_flight: number;
}

/**
 * The tenant's dependencies: every distinct dependency_key among its live jobs (one pass over
 * `jobs_live_idx`, in the tenant's shard) and every paused one, with its due and in-flight counts, by key. `key` narrows it
 * to one dependency (no row: no live job and not paused).
 */
export async function listDependencies(db: Queryable, tenantId: string, key?: string): Promise<DependencyRow[]> {
  const { rows } = await db.query<DependencyRow>(
    `WITH live AS (
       SELECT dependency_key AS key,
              count(*) FILTER (WHERE status = 'scheduled' AND due_at <= now())::int AS due,
              count(*) FILTER (WHERE status IN ('dispatched', 'running'))::int AS in_flight
         FROM jobs
        WHERE ${liveJobsOfTenant("$1")}
          AND dependency_key IS NOT NULL
          AND ($2::text IS NULL OR dependency_key = $2)
        GROUP BY dependency_key
     ), paused AS (
       SELECT dependency_key AS key, paused_at, reason FROM dependency_pauses
        WHERE tenant_id = $1 AND ($2::text IS NULL OR dependency_key = $2)
     )
     SELECT coalesce(l.key, p.key) AS key, p.paused_at, p.reason, coalesce(l.due, 0) AS due, coalesce(l.in_flight, 0) AS in_flight
       FROM live l FULL JOIN paused p ON p.key = l.key
      ORDER BY 1`,
    [tenantId, key ?? null],
  );
  return rows;
}

/**
 * Pauses the tenant's jobs of one dependency (whether or not it has any yet). Idempotent: pausing a paused
 * dependency keeps its first pause (who, when, why). Returns whether this call paused it.
 */
export async function pauseDependency(
  db: Queryable,
  p: { tenantId: string; key: string; actorType: string; actorId: string | null; reason: string | null },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO dependency_pauses (tenant_id, dependency_key, paused_by_type, paused_by_id, reason)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, dependency_key) DO NOTHING`,
    [p.tenantId, p.key, p.actorType, p.actorId, p.reason],
  );
  return rowCount === 1;
}

/** Resumes the tenant's jobs of one dependency. Idempotent; returns whether it was paused. */
export async function resumeDependency(db: Queryable, tenantId: string, key: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM dependency_pauses WHERE tenant_id = $1 AND dependency_key = $2`, [tenantId, key]);
  return rowCount === 1;
}

/**
 * Records that a dependency's circuit breaker opened (S11): called by the worker whose outcome opened it, once
 * per opening. `openUntil` is when it half-opens as the breaker fixed it (null when it could not be read).
 */
export async function recordBreakerOpening(
  db: Queryable,
  opening: { dependencyKey: string; tenantId: string; jobId: string | null; openUntil: Date | null },
): Promise<void> {
  await db.query(`INSERT INTO breaker_openings (dependency_key, tenant_id, job_id, open_until) VALUES ($1, $2, $3, $4)`, [
    opening.dependencyKey,
    opening.tenantId,
    opening.jobId,
    opening.openUntil,
  ]);
}

export interface BreakerOpeningBinRow {
  dependency_key: string;
  bin: Date;
  openings: number;
}

/**
 * The tenant's breaker openings (breakers are per tenant and dependency) per dependency and bin of
 * `binSeconds` in [from, to), read through the (tenant_id, opened_at) index.
 */
export async function breakerOpeningsByBin(db: Queryable, tenantId: string, from: Date, to: Date, binSeconds: number): Promise<BreakerOpeningBinRow[]> {
  const { rows } = await db.query<BreakerOpeningBinRow>(
    `SELECT dependency_key, date_bin(make_interval(secs => $4), opened_at, timestamptz '1970-01-01 00:00:00+00') AS bin, count(*)::int AS openings
       FROM breaker_openings WHERE tenant_id = $1 AND opened_at >= $2 AND opened_at < $3
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [tenantId, from, to, binSeconds],
  );
  return rows;
}
