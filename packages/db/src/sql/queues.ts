// Live figures of a tenant's queues, for GET /queues and the console's queue page.
import { liveJobsOfTenant } from "./live-jobs.js";
import type { Queryable } from "./types.js";

export interface QueueStatsRow {
  queue_id: string;
  /** Scheduled and due now. */
  due: number;
  /** Scheduled, due or not. */
  scheduled: number;
  /** Dispatched or running. */
  in_flight: number;
  /** now() − the oldest due job's due_at (database clock), null when none is due. */
  oldest_due_age_ms: number | null;
}

/**
 * Every queue's live figures in one pass over the tenant's live jobs (`jobs_live_idx`), grouped by
 * queue; queues with no live job have no row (their figures are zero).
 */
export async function queueStats(db: Queryable, tenantId: string): Promise<QueueStatsRow[]> {
  const { rows } = await db.query<QueueStatsRow>(
    `SELECT queue_id,
            count(*) FILTER (WHERE status = 'scheduled' AND due_at <= now())::int AS due,
            count(*) FILTER (WHERE status = 'scheduled')::int AS scheduled,
            count(*) FILTER (WHERE status IN ('dispatched', 'running'))::int AS in_flight,
            floor(extract(epoch FROM now() - min(due_at) FILTER (WHERE status = 'scheduled' AND due_at <= now())) * 1000)::float8 AS oldest_due_age_ms
       FROM jobs
      WHERE ${liveJobsOfTenant("$1")}
      GROUP BY queue_id`,
    [tenantId],
  );
  return rows;
}
