import type { Counter, Gauge, Histogram } from "prom-client";

/** The label value every tenant, queue or dependency without a series of its own is summed under. */
export const OTHER_LABEL = "other";

export interface BoundedLabelOptions {
  /** Values always labelled as themselves (TICK_METRICS_TENANTS, TICK_METRICS_DEPENDENCIES). */
  allow?: readonly string[];
  /** Most further values labelled as themselves, the busiest by volume (TICK_METRICS_TOP_*). */
  top: number;
  /** How often the busiest are ranked again (default a minute). */
  rankEveryMs?: number;
  /** A monotonic clock in ms (default performance.now), injected by tests. */
  now?: () => number;
}

/** Volume counted per ranking period, and the decay of older periods' volume at each ranking. */
const DECAY = 0.5;
/** A member keeps its place unless a newcomer's volume beats its own by this factor (no flapping). */
const STICKINESS = 1.25;
/** Distinct values whose volume is tracked per period; beyond it a new value cannot compete until the next one. */
const MAX_TRACKED = 100_000;

/**
 * Bounds a label's values (tenant, dependency): the allow-list, plus at most `top` more chosen by volume,
 * each keep their own value; everything else is summed under "other". So a process exports at most
 * allow + top + 1 values of the label whatever the number of tenants. `label()` is O(1): it counts the
 * value's volume in a map and answers from a set. While places are free a new value takes one at once
 * (a small deployment labels every tenant); once they are full, the ranking, once per period, gives the
 * places to the busiest values (volume decays by half per period) and evicts the others: listeners (the
 * metrics using the label) then drop the evicted value's series, so the series count stays bounded too.
 */
export class BoundedLabel {
  private readonly allow: ReadonlySet<string>;
  private readonly members = new Set<string>();
  private volume = new Map<string, number>();
  private scores = new Map<string, number>();
  private readonly listeners: ((value: string) => void)[] = [];
  private readonly now: () => number;
  private readonly rankEveryMs: number;
  private nextRankAt: number;

  constructor(private readonly options: BoundedLabelOptions) {
    this.allow = new Set(options.allow ?? []);
    this.now = options.now ?? (() => performance.now());
    this.rankEveryMs = options.rankEveryMs ?? 60_000;
    this.nextRankAt = this.now() + this.rankEveryMs;
  }

  /** The label value for `value`, counting `volume` (events, backlog) toward its rank. */
  label(value: string | null | undefined, volume = 1): string {
    if (!value) return OTHER_LABEL;
    if (this.now() >= this.nextRankAt) this.rank();
    if (volume > 0 && (this.volume.size < MAX_TRACKED || this.volume.has(value))) this.volume.set(value, (this.volume.get(value) ?? 0) + volume);
    if (this.allow.has(value) || this.members.has(value)) return value;
    if (this.members.size < this.options.top) {
      this.members.add(value);
      return value;
    }
    return OTHER_LABEL;
  }

  /** The values labelled as themselves now (allow-list and the busiest). */
  labelled(): string[] {
    return [...new Set([...this.allow, ...this.members])];
  }

  /** Told of each value that loses its place (its series should go; its later events count as "other"). */
  onEvict(listener: (value: string) => void): void {
    this.listeners.push(listener);
  }

  /** Ranks the values by decayed volume and gives the places to the busiest (run by label() once per period). */
  rank(): void {
    this.nextRankAt = this.now() + this.rankEveryMs;
    const scores = new Map<string, number>();
    for (const [value, score] of this.scores) if (score * DECAY >= 0.5) scores.set(value, score * DECAY);
    for (const [value, n] of this.volume) scores.set(value, (scores.get(value) ?? 0) + n);
    this.scores = scores;
    this.volume = new Map();
    const weight = (value: string) => (scores.get(value) ?? 0) * (this.members.has(value) ? STICKINESS : 1);
    const ranked = [...scores.keys()].filter((v) => !this.allow.has(v)).sort((a, b) => weight(b) - weight(a));
    const chosen = new Set(ranked.slice(0, this.options.top));
    // Members without any recent volume keep their place while it is not wanted (no churn in a quiet hour).
    for (const member of this.members) if (chosen.size < this.options.top && !scores.has(member)) chosen.add(member);
    for (const member of [...this.members]) {
      if (chosen.has(member)) continue;
      this.members.delete(member);
      for (const listener of this.listeners) listener(member);
    }
    for (const value of chosen) this.members.add(value);
  }
}

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

/**
 * Removes every series of `metric` whose labels match (after an eviction), reading its label sets once.
 * Histogram series are removed by their labels without `le`.
 */
export async function removeSeries(metric: AnyMetric, matches: (labels: Record<string, string | number>) => boolean): Promise<void> {
  const { values } = await metric.get();
  const seen = new Set<string>();
  for (const { labels } of values) {
    const { le: _le, ...own } = labels as Record<string, string | number>;
    const key = JSON.stringify(own);
    if (seen.has(key) || !matches(own)) continue;
    seen.add(key);
    metric.remove(own as never);
  }
}

export interface MetricLabelConfig {
  /** Tenant IDs always labelled (TICK_METRICS_TENANTS). */
  tenants: readonly string[];
  /** Busiest further tenants labelled (TICK_METRICS_TOP_TENANTS). */
  topTenants: number;
  /** Busiest (tenant, queue) pairs labelled with their queue name (TICK_METRICS_TOP_QUEUES). */
  topQueues: number;
  /** Dependencies always labelled (TICK_METRICS_DEPENDENCIES). */
  dependencies: readonly string[];
  /** Busiest further dependencies labelled (TICK_METRICS_TOP_DEPENDENCIES). */
  topDependencies: number;
}

export const DEFAULT_METRIC_LABELS: MetricLabelConfig = { tenants: [], topTenants: 20, topQueues: 50, dependencies: [], topDependencies: 20 };

/**
 * A process's bounded labels, shared by all of its metrics: tenants, queues (within a labelled tenant)
 * and dependencies. Metrics that carry one of these labels are registered with `track`, so an evicted
 * value's series are removed.
 */
export class MetricLabels {
  readonly tenants: BoundedLabel;
  readonly dependencies: BoundedLabel;
  /** Keyed `tenant\u0000queue`: a queue name is labelled only within a labelled tenant. */
  private readonly queues: BoundedLabel;
  private readonly tenantMetrics: AnyMetric[] = [];
  private readonly queueMetrics: AnyMetric[] = [];
  private readonly dependencyMetrics: AnyMetric[] = [];

  constructor(config: MetricLabelConfig = DEFAULT_METRIC_LABELS, options: { rankEveryMs?: number; now?: () => number } = {}) {
    this.tenants = new BoundedLabel({ allow: config.tenants, top: config.topTenants, ...options });
    this.queues = new BoundedLabel({ top: config.topQueues, ...options });
    this.dependencies = new BoundedLabel({ allow: config.dependencies, top: config.topDependencies, ...options });
    const drop = (metrics: AnyMetric[], matches: (value: string) => (labels: Record<string, string | number>) => boolean) => (value: string) => {
      for (const metric of metrics) void removeSeries(metric, matches(value)).catch(() => {});
    };
    this.tenants.onEvict(drop(this.tenantMetrics, (tenant) => (labels) => labels.tenant === tenant));
    this.queues.onEvict(
      drop(this.queueMetrics, (key) => {
        const [tenant, queue] = key.split("\u0000");
        return (labels) => labels.tenant === tenant && labels.queue === queue;
      }),
    );
    this.dependencies.onEvict(drop(this.dependencyMetrics, (dependency) => (labels) => labels.dependency === dependency));
  }

  /** Registers a metric with a `tenant`, `queue` or `dependency` label, so evicted values' series go. */
  track<M extends AnyMetric>(metric: M, label: "tenant" | "queue" | "dependency"): M {
    if (label === "dependency") this.dependencyMetrics.push(metric);
    else this.tenantMetrics.push(metric);
    if (label === "queue") this.queueMetrics.push(metric);
    return metric;
  }

  tenant(tenantId: string | null | undefined, volume = 1): string {
    return this.tenants.label(tenantId, volume);
  }

  /** Tenant and queue labels: the queue is "other" for an unlabelled tenant or a queue outside the busiest pairs. */
  tenantQueue(tenantId: string | null | undefined, queue: string | null | undefined, volume = 1): { tenant: string; queue: string } {
    const tenant = this.tenants.label(tenantId, volume);
    if (tenant === OTHER_LABEL || !queue) return { tenant, queue: OTHER_LABEL };
    const key = `${tenant}\u0000${queue}`;
    return { tenant, queue: this.queues.label(key, volume) === key ? queue : OTHER_LABEL };
  }

  dependency(dependency: string | null | undefined, volume = 1): string {
    return this.dependencies.label(dependency, volume);
  }
}

/**
 * Sets a gauge from a fresh snapshot (per-queue figures, replay progress): the old series go, rows whose
 * labels coincide (everything summed under "other") are combined by `combine`.
 */
export function setGaugeSnapshot(gauge: Gauge<string>, rows: readonly { labels: Record<string, string>; value: number }[], combine: "sum" | "max" = "sum"): void {
  const merged = new Map<string, { labels: Record<string, string>; value: number }>();
  for (const row of rows) {
    const key = JSON.stringify(row.labels);
    const seen = merged.get(key);
    if (!seen) merged.set(key, { labels: row.labels, value: row.value });
    else seen.value = combine === "sum" ? seen.value + row.value : Math.max(seen.value, row.value);
  }
  gauge.reset();
  for (const { labels, value } of merged.values()) gauge.set(labels, value);
}
