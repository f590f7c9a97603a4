import { STATS_WINDOWS, type Stats, type StatsWindow } from "@tick/contract";
import { lagPercentileMs } from "@tick/core";
import { sql } from "@tick/db";
import type { ServiceDeps } from "./service-deps";

type Deps = Pick<ServiceDeps, "pool">;

/** Dependencies charted: the busiest by finished jobs in the window. */
const TOP_DEPENDENCIES = 5;

/**
 * The overview's time series (#20) for one tenant and window, from the scheduler's per-minute rollups: three
 * reads of the window's rollup rows (jobs, queue gauges, dependencies), never of job history, so a page view
 * costs the same however many jobs the tenant ran. Bins are aligned to their size on the database clock;
 * the last one holds now, and every bin is present.
 */
export async function getStats(deps: Deps, tenantId: string, window: StatsWindow): Promise<Stats> {
  const { binSeconds, bins: binCount } = STATS_WINDOWS[window];
  const binMs = binSeconds * 1000;
  const now = (await sql.databaseNow(deps.pool)).getTime();
  const last = Math.floor(now / binMs) * binMs;
  const from = new Date(last - (binCount - 1) * binMs);
  const to = new Date(last + binMs);
  const starts = Array.from({ length: binCount }, (_, i) => from.getTime() + i * binMs);
  const index = (at: Date) => Math.round((at.getTime() - from.getTime()) / binMs);

  const [jobRows, gaugeRows, dependencyRows] = await Promise.all([
    sql.jobStatsByBin(deps.pool, tenantId, from, to, binSeconds),
    sql.queueGaugesByBin(deps.pool, tenantId, from, to, binSeconds),
    sql.topDependencyStatsByBin(deps.pool, tenantId, from, to, binSeconds, TOP_DEPENDENCIES),
  ]);

  const jobsAt = new Map(jobRows.map((r) => [index(r.bin), r]));
  const dlqAt = new Map<number, number>();
  for (const g of gaugeRows) dlqAt.set(index(g.bin), (dlqAt.get(index(g.bin)) ?? 0) + g.dead);
  const bins = starts.map((start, i) => {
    const r = jobsAt.get(i);
    return {
      at: new Date(start).toISOString(),
      succeeded: r?.succeeded ?? 0,
      dead: r?.dead ?? 0,
      cancelled: r?.cancelled ?? 0,
      expired: r?.expired ?? 0,
      lagP50Ms: r ? lagPercentileMs(r.lag_buckets, 0.5) : null,
      lagP99Ms: r ? lagPercentileMs(r.lag_buckets, 0.99) : null,
      dlq: dlqAt.get(i) ?? null,
    };
  });

  const byQueue = new Map<string, Map<number, sql.QueueGaugeBinRow>>();
  for (const g of gaugeRows) {
    const points = byQueue.get(g.queue) ?? new Map<number, sql.QueueGaugeBinRow>();
    points.set(index(g.bin), g);
    byQueue.set(g.queue, points);
  }
  const queues = [...byQueue].map(([queue, points]) => ({
    queue,
    points: starts.map((start, i) => {
      const g = points.get(i);
      return {
        at: new Date(start).toISOString(),
        due: g?.due ?? null,
        waiting: g?.waiting ?? null,
        inFlight: g?.in_flight ?? null,
        oldestDueAgeMs: g?.oldest_due_age_ms ?? null,
      };
    }),
  }));

  const byDependency = new Map<string, Map<number, sql.DependencyStatsBinRow>>();
  for (const d of dependencyRows) {
    const points = byDependency.get(d.dependency_key) ?? new Map<number, sql.DependencyStatsBinRow>();
    points.set(index(d.bin), d);
    byDependency.set(d.dependency_key, points);
  }
  const dependencies = [...byDependency].map(([key, points]) => ({
    key,
    points: starts.map((start, i) => {
      const d = points.get(i);
      const finished = d?.finished ?? 0;
      const dead = d?.dead ?? 0;
      return { at: new Date(start).toISOString(), finished, dead, failureRate: finished > 0 ? dead / finished : null };
    }),
  }));

  return { window, binSeconds, from: from.toISOString(), to: to.toISOString(), bins, queues, dependencies };
}
