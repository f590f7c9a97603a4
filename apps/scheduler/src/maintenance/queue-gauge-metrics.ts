import type pg from "pg";
import { sql } from "@tick/db";
import { setGaugeSnapshot } from "@tick/runtime";
import type { SchedulerMetrics } from "../metrics.js";

/** A sample older than this is not exported (the maintenance loop samples every queue once a minute). */
const MAX_SAMPLE_AGE_MS = 60_000;

/**
 * Exports the maintenance loop's per-minute queue sample (queue_minute_gauges) of the held shards as
 * gauges per tenant and queue: waiting, overdue and in-flight jobs, the oldest overdue job's wait and the
 * DLQ size. It reads the sample back rather than counting jobs again, so the figures cost one read of the
 * latest sample per refresh, never a query on the dispatch path. Tenants and queues outside the bounded
 * labels are summed under "other" (the oldest wait: the longest). A shard given up takes its tenants'
 * series with it at the next refresh.
 */
export class QueueGaugeMetrics {
  constructor(
    private readonly pool: pg.Pool,
    private readonly metrics: SchedulerMetrics,
  ) {}

  async refresh(shards: readonly number[]): Promise<number> {
    const samples = await sql.latestQueueGaugeSamples(this.pool, shards, MAX_SAMPLE_AGE_MS);
    const jobs: { labels: Record<string, string>; value: number }[] = [];
    const oldest: { labels: Record<string, string>; value: number }[] = [];
    const dead: { labels: Record<string, string>; value: number }[] = [];
    for (const s of samples) {
      // A backlog counts toward a tenant's rank: a bursting tenant gets series of its own (S16).
      const labels = this.metrics.labels.tenantQueue(s.tenant_id, s.queue, s.due);
      jobs.push({ labels: { ...labels, state: "waiting" }, value: s.waiting });
      jobs.push({ labels: { ...labels, state: "overdue" }, value: s.due });
      jobs.push({ labels: { ...labels, state: "in_flight" }, value: s.in_flight });
      oldest.push({ labels, value: (s.oldest_due_age_ms ?? 0) / 1000 });
      dead.push({ labels, value: s.dead });
    }
    setGaugeSnapshot(this.metrics.queueJobs, jobs);
    setGaugeSnapshot(this.metrics.queueOldestDueAge, oldest, "max");
    setGaugeSnapshot(this.metrics.dlqJobs, dead);
    return samples.length;
  }
}
