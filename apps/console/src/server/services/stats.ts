import { STATS_WINDOWS, type Stats, type StatsWindow } from "@tick/contract";
import { lagPercentileMs } from "@tick/core";
import { sql } from "@tick/db";
import type { TenantServiceDeps } from "./tenant-service-deps";

type Deps = Pick<TenantServiceDeps, "pool">;

/** Dependencies charted: the busiest by finished jobs in the window. */
const TOP_DEPENDENCIES = 5;

/**
 * The overview's time series for one tenant and window, from the scheduler's per-minute rollups: three
 * reads of the window's rollup rows (jobs, queue gauges, dependencies) and one of its breaker openings, never of job history, so a page view
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

  const [jobRows, gaugeRows, dependencyRows, openingRows] = await Promise.all([
    sql.jobStatsByBin(deps.pool, tenantId, from, to, binSeconds),
    sql.queueGaugesByBin(deps.pool, tenantId, from, to, binSeconds),
    sql.topDependencyStatsByBin(deps.pool, tenantId, from, to, binSeconds, TOP_DEPENDENCIES),
    sql.breakerOpeningsByBin(deps.pool, tenantId, from, to, binSeconds),
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
      rateLimited: r?.rate_limited ?? 0,
      lagP50Ms: r ? lagPercentileMs(r.lag_buckets, 0.5) : null,
      lagP99Ms: r ? lagPercentileMs(r.lag_buckets, 0.99) : null,
      dlq: dlqAt.get(i) ?? null,
    };
  });

  const queues = seriesByKey(gaugeRows, (g) => g.queue, index, starts, (g) => ({
    due: g?.due ?? null,
    waiting: g?.waiting ?? null,
    inFlight: g?.in_flight ?? null,
    oldestDueAgeMs: g?.oldest_due_age_ms ?? null,
  })).map(([queue, points]) => ({ queue, points }));
  const dependencies = seriesByKey(dependencyRows, (d) => d.dependency_key, index, starts, (d) => {
    const finished = d?.finished ?? 0;
    const dead = d?.dead ?? 0;
    return { finished, dead, failureRate: finished > 0 ? dead / finished : null };
  }).map(([key, points]) => ({ key, points }));
  const breakerOpenings = seriesByKey(openingRows, (o) => o.dependency_key, index, starts, (o) => ({ openings: o?.openings ?? 0 })).map(
    ([key, points]) => ({ key, points }),
  );

  return { window, binSeconds, from: from.toISOString(), to: to.toISOString(), bins, queues, dependencies, breakerOpenings };
}

/**
 * Rows of one series per key (a queue, a dependency), each bin's row placed by its index: every key gets a
 * point for every bin, `point(undefined)` where it has no row.
 */
function seriesByKey<R extends { bin: Date }, P>(
  rows: R[],
  keyOf: (row: R) => string,
  index: (at: Date) => number,
  starts: number[],
  point: (row: R | undefined) => P,
): [string, ({ at: string } & P)[]][] {
  const byKey = new Map<string, Map<number, R>>();
  for (const r of rows) {
    const points = byKey.get(keyOf(r)) ?? new Map<number, R>();
    points.set(index(r.bin), r);
    byKey.set(keyOf(r), points);
  }
  return [...byKey].map(([key, points]) => [key, starts.map((start, i) => ({ at: new Date(start).toISOString(), ...point(points.get(i)) }))]);
}
