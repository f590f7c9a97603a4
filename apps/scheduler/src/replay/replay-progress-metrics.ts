import { setGaugeSnapshot } from "@tick/runtime";
import type { SchedulerMetrics } from "../metrics.js";
import type { ReplayProgress } from "./replayer.js";

/**
 * The open DLQ replays' progress as gauges (S17), per tenant: replays by status, their jobs by state, and
 * the failure rate the replayer judges them by (its target's error rate). Kept per shard from the replay
 * loop's last round, so a shard given up, or whose replays all finished, drops out.
 */
export class ReplayProgressMetrics {
  private readonly byShard = new Map<number, ReplayProgress[]>();

  constructor(private readonly metrics: SchedulerMetrics) {}

  record(shard: number, progress: ReplayProgress[]): void {
    this.byShard.set(shard, progress);
  }

  /** Forgets every shard but these, then sets the gauges from what is left. */
  keepOnly(shards: readonly number[]): void {
    const keep = new Set(shards);
    for (const shard of [...this.byShard.keys()]) if (!keep.has(shard)) this.byShard.delete(shard);
    const replays: { labels: Record<string, string>; value: number }[] = [];
    const jobs: { labels: Record<string, string>; value: number }[] = [];
    const failure: { labels: Record<string, string>; value: number }[] = [];
    for (const p of [...this.byShard.values()].flat()) {
      const tenant = this.metrics.labels.tenant(p.tenantId, 0);
      replays.push({ labels: { tenant, status: p.status }, value: 1 });
      for (const [state, value] of [
        ["pending", p.pending],
        ["in_flight", p.inFlight],
        ["succeeded", p.succeeded],
        ["failed", p.failed],
        ["skipped", p.skipped],
      ] as const) {
        jobs.push({ labels: { tenant, state }, value });
      }
      if (p.failureRate !== null) failure.push({ labels: { tenant }, value: p.failureRate });
    }
    setGaugeSnapshot(this.metrics.replaysOpen, replays);
    setGaugeSnapshot(this.metrics.replayJobs, jobs);
    setGaugeSnapshot(this.metrics.replayFailureRatio, failure, "max");
  }
}
