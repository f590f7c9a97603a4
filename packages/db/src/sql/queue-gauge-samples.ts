// The per-minute queue sample (rollups.ts: sampleQueueGauges, written by the scheduler's maintenance loop)
// read back for Prometheus: the scheduler exports each queue's latest figures as gauges instead of
// counting its queues' jobs again (docs/observability.md).
import type { Queryable } from "./types.js";

export interface QueueGaugeSample {
  tenant_id: string;
  queue: string;
  /** Scheduled jobs whose due time has passed (not yet dispatched). */
  due: number;
  /** Scheduled jobs, due or not. */
  waiting: number;
  in_flight: number;
  dead: number;
  oldest_due_age_ms: number | null;
}

/**
 * Each queue's most recent sample of the shards' tenants, if one was taken within `maxAgeMs` (database
 * clock): per tenant, the rows of its latest sampled minute, through the gauges' (tenant_id, minute) key.
 */
export async function latestQueueGaugeSamples(db: Queryable, shards: readonly number[], maxAgeMs: number): Promise<QueueGaugeSample[]> {
  if (shards.length === 0) return [];
  const { rows } = await db.query<QueueGaugeSample>(
    `SELECT g.tenant_id, q.name AS queue, g.due, g.waiting, g.in_flight, g.dead, g.oldest_due_age_ms::float8 AS oldest_due_age_ms
       FROM tenants t
       CROSS JOIN LATERAL (
         SELECT max(m.minute) AS minute FROM queue_minute_gauges m
          WHERE m.tenant_id = t.id AND m.minute >= now() - make_interval(secs => $2 / 1000.0) - interval '1 minute'
       ) latest
       JOIN queue_minute_gauges g ON g.tenant_id = t.id AND g.minute = latest.minute AND g.shard = t.shard
       JOIN queues q ON q.id = g.queue_id
      WHERE t.shard = ANY($1::int[])`,
    [shards, maxAgeMs],
  );
  return rows;
}
