import type pg from "pg";

/**
 * How late each attempt started after the job was due, for every tenant, by the database clock (which
 * may be injected: only differences are used), assigned to the phase in which it fell due.
 *
 * "Due" per attempt:
 * - the first attempt: the job's original due time (creation plus its delay, or the schedule occurrence);
 * - a retry after a failed or lost attempt: the end of the attempt before it (its failure, or the reaper's
 *   verdict on its lease) plus the largest backoff the job's policy allows, so jitter never counts as lag;
 *   the time a lost lease takes to be presumed lost (lease TTL + grace) is the lease's hold, not lag;
 * - an attempt after a discarded one is not judged: a requeue (open breaker, probe taken, retry budget,
 *   replay pacing) set its due time, which is not kept.
 * Jobs of a dependency the run takes down (`heldDependencies`) are not judged: the claim holds them
 * while the breaker is open, which leaves no row behind. Nor are jobs a flow key's cap or rate holds (the
 * keyed tenant's dependencies, passed the same way).
 */
export interface StartLag {
  jobId: string;
  attempt: number;
  tenantId: string;
  /** Host time (ms) at which the attempt fell due, for phase assignment. */
  dueAtHostMs: number;
  lagMs: number;
}

export async function measureStartLags(args: {
  pool: pg.Pool;
  /** Delay (ms) each job was created with, by job ID; absent means due at creation. */
  delayOf: Map<string, number>;
  heldDependencies: string[];
}): Promise<StartLag[]> {
  const { rows } = await args.pool.query<{
    job_id: string;
    tenant_id: string;
    number: number;
    status: string;
    started_ms: string | null;
    prev_status: string | null;
    prev_finished_ms: string | null;
    created_ms: string;
    occurrence_ms: string | null;
    backoff_max_ms: string | null;
    offset_ms: string;
  }>(
    `SELECT a.job_id, j.tenant_id, a.number, a.status,
            (extract(epoch FROM a.started_at) * 1000)::bigint::text AS started_ms,
            lag(a.status) OVER w AS prev_status,
            (extract(epoch FROM lag(a.finished_at) OVER w) * 1000)::bigint::text AS prev_finished_ms,
            (extract(epoch FROM j.created_at) * 1000)::bigint::text AS created_ms,
            (extract(epoch FROM j.occurrence_at) * 1000)::bigint::text AS occurrence_ms,
            (j.backoff->>'maxMs') AS backoff_max_ms,
            (extract(epoch FROM now()) * 1000)::bigint::text AS offset_ms
       FROM history.attempts_all a JOIN history.jobs_all j ON j.id = a.job_id
      WHERE j.dependency_key IS NULL OR j.dependency_key <> ALL($1::text[])
     WINDOW w AS (PARTITION BY a.job_id ORDER BY a.number)`,
    [args.heldDependencies],
  );
  // Database clock minus host clock, read now: maps database instants onto the phases' host times.
  const offset = rows.length ? Number(rows[0]!.offset_ms) - Date.now() : 0;
  const lags: StartLag[] = [];
  for (const r of rows) {
    if (r.started_ms === null) continue; // never started (discarded, or pending when cancelled)
    let due: number;
    if (r.number === 1) due = r.occurrence_ms !== null ? Number(r.occurrence_ms) : Number(r.created_ms) + (args.delayOf.get(r.job_id) ?? 0);
    else if ((r.prev_status === "failed" || r.prev_status === "lease_expired") && r.prev_finished_ms !== null) due = Number(r.prev_finished_ms) + Number(r.backoff_max_ms ?? 0);
    else continue;
    lags.push({ jobId: r.job_id, attempt: r.number, tenantId: r.tenant_id, dueAtHostMs: due - offset, lagMs: Math.max(0, Number(r.started_ms) - due) });
  }
  return lags;
}
