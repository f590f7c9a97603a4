import type { BreakerKey, Breakers } from "@tick/breaker";
import { setGaugeSnapshot } from "@tick/runtime";
import { BREAKER_STATE_VALUE, type WorkerMetrics } from "../metrics.js";

/** Breakers (tenant, dependency) whose window is read per refresh, at most: the most recently called first. */
const MAX_WATCHED = 250;

export interface BreakerMetrics {
  /** The breakers, with every outcome they record counted in tick_dependency_calls_total. */
  breakers: Breakers;
  /** Reads the watched breakers' state and window and the open breakers (two Redis round trips), into the gauges. */
  refresh(): Promise<void>;
}

/**
 * The worker's view of its dependencies' health (S11): every outcome the attempt runner records counts per
 * dependency and result (in memory, O(1)), and a periodic refresh reads the breakers of the dependencies
 * with series of their own (the allow-list and the busiest) that this worker called lately, for their state
 * and retry budget, and counts every open breaker by dependency. A dependency down shows as open breakers
 * on it for many tenants; one tenant's failing endpoint as one.
 */
export function observeBreakers(breakers: Breakers, metrics: WorkerMetrics): BreakerMetrics {
  const { labels } = metrics;
  // Recently recorded breakers, in call order (a Map re-inserted on each call keeps the newest last).
  const recent = new Map<string, BreakerKey>();
  metrics.retryBudgetLimit.set(breakers.policy.retryBudget);
  return {
    breakers: {
      ...breakers,
      async record(key, ok) {
        metrics.dependencyCalls.inc({ dependency: labels.dependency(key.dependency), result: ok ? "healthy" : "unhealthy" });
        const name = `${key.tenantId}/${key.dependency}`;
        recent.delete(name);
        recent.set(name, key);
        if (recent.size > MAX_WATCHED) recent.delete(recent.keys().next().value!);
        return breakers.record(key, ok);
      },
    },
    async refresh() {
      const watched = new Set(labels.dependencies.labelled());
      const keys = [...recent.values()].filter((k) => watched.has(k.dependency));
      const [windows, open] = await Promise.all([breakers.windowStats(keys), breakers.openDependencies()]);
      const state: { labels: Record<string, string>; value: number }[] = [];
      const budget: { labels: Record<string, string>; value: number }[] = [];
      keys.forEach((key, i) => {
        const w = windows[i]!;
        state.push({ labels: { dependency: key.dependency }, value: BREAKER_STATE_VALUE[w.state] });
        budget.push({ labels: { dependency: key.dependency }, value: w.attempts > 0 ? w.retries / w.attempts : 0 });
      });
      // Every open breaker, whoever called it: by dependency (those without series of their own as "other").
      const openByDependency = open.map((key) => ({ labels: { dependency: labels.dependency(key.dependency, 0) }, value: 1 }));
      for (const { labels: l } of openByDependency) state.push({ labels: l, value: BREAKER_STATE_VALUE.open });
      setGaugeSnapshot(metrics.breakerState, state, "max");
      setGaugeSnapshot(metrics.retryBudgetUsed, budget, "max");
      setGaugeSnapshot(metrics.breakersOpen, openByDependency);
    },
  };
}
