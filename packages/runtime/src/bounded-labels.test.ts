import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { BoundedLabel, MetricLabels, OTHER_LABEL, setGaugeSnapshot } from "./bounded-labels.js";

/** Series of a metric as the registry would export them (histograms: one label set per bucket line, so by labels without le). */
async function series(metric: Counter<string> | Gauge<string> | Histogram<string>): Promise<Record<string, string | number>[]> {
  const { values } = await metric.get();
  const seen = new Map<string, Record<string, string | number>>();
  for (const { labels } of values) {
    const { le: _le, ...own } = labels as Record<string, string | number>;
    seen.set(JSON.stringify(own), own);
  }
  return [...seen.values()];
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("bounded metric labels", () => {
  it("10,000 tenants make at most top + allow-list + 1 series, every event is counted, and the busiest tenants are the labelled ones", async () => {
    let now = 0;
    const allowed = "00000000-0000-4000-8000-000000000001";
    const labels = new MetricLabels({ tenants: [allowed], topTenants: 20, topQueues: 50, dependencies: [], topDependencies: 20 }, { rankEveryMs: 60_000, now: () => now });
    const registry = new Registry();
    const dispatched = labels.track(new Counter({ name: "t_dispatched_total", help: "x", labelNames: ["tenant"], registers: [registry] }), "tenant");
    const lag = labels.track(new Histogram({ name: "t_lag_seconds", help: "x", labelNames: ["tenant", "queue"], buckets: [0.1, 1], registers: [registry] }), "queue");

    const tenants = Array.from({ length: 10_000 }, (_, i) => `tenant-${i}`);
    // Ten of them are busy: 100 events each per minute; the rest one each; and the allow-listed one once.
    const busy = tenants.slice(5_000, 5_010);
    let events = 0;
    for (let minute = 0; minute < 3; minute++) {
      for (const t of tenants) {
        const n = busy.includes(t) ? 100 : 1;
        for (let i = 0; i < n; i++) {
          dispatched.inc({ tenant: labels.tenant(t) });
          lag.observe(labels.tenantQueue(t, `queue-${i % 3}`, 0), 0.5);
          events++;
        }
      }
      dispatched.inc({ tenant: labels.tenant(allowed) });
      events++;
      now += 60_000; // the next label() ranks
      await settle();
    }
    labels.tenant("tenant-0", 0); // a call after the last minute: the ranking runs, evicted series go
    await settle();

    const tenantSeries = await series(dispatched);
    expect(tenantSeries.length).toBeLessThanOrEqual(20 + 1 + 1);
    expect(tenantSeries.length).toBeGreaterThan(10);
    const values = (await dispatched.get()).values;
    // Events of evicted tenants' removed series are gone from the sum, so the live series count at most every event ...
    expect(values.reduce((sum, v) => sum + v.value, 0)).toBeLessThanOrEqual(events);
    // ... and the busy tenants, ranked in, and the allow-listed one keep series of their own; the rest is "other".
    const named = new Set(tenantSeries.map((s) => s.tenant));
    for (const t of busy) expect(named.has(t)).toBe(true);
    expect(named.has(allowed)).toBe(true);
    expect(named.has(OTHER_LABEL)).toBe(true);
    // (tenant, queue) pairs: at most the queue bound, plus one "other" queue per labelled tenant, plus other/other.
    expect((await series(lag)).length).toBeLessThanOrEqual(50 + 22 + 1);
    expect(registry.getMetricsAsArray().length).toBe(2);
  });

  it("labels every value while places are free, so a small deployment sees each tenant at once", () => {
    const label = new BoundedLabel({ top: 3 });
    expect(["a", "b", "c", "d"].map((v) => label.label(v))).toEqual(["a", "b", "c", OTHER_LABEL]);
    expect(label.label(null)).toBe(OTHER_LABEL);
    expect(label.labelled().sort()).toEqual(["a", "b", "c"]);
  });

  it("a tenant that starts bursting takes the place of the quietest at the next ranking, and its eviction removes the quiet one's series", async () => {
    let now = 0;
    const labels = new MetricLabels({ tenants: [], topTenants: 2, topQueues: 10, dependencies: [], topDependencies: 2 }, { rankEveryMs: 1_000, now: () => now });
    const registry = new Registry();
    const counter = labels.track(new Counter({ name: "t_total", help: "x", labelNames: ["tenant"], registers: [registry] }), "tenant");
    for (const t of ["quiet", "steady"]) counter.inc({ tenant: labels.tenant(t) });
    for (let i = 0; i < 50; i++) counter.inc({ tenant: labels.tenant("burst") });
    for (let i = 0; i < 10; i++) counter.inc({ tenant: labels.tenant("steady") });
    expect(labels.tenant("burst", 0)).toBe(OTHER_LABEL);
    now = 1_000;
    expect(labels.tenant("burst")).toBe("burst");
    await settle();
    expect((await series(counter)).map((s) => s.tenant).sort()).toEqual([OTHER_LABEL, "steady"]);
    expect(labels.tenant("quiet")).toBe(OTHER_LABEL);
  });

  it("a dependency outside the allow-list and the busiest is summed under other", () => {
    const labels = new MetricLabels({ tenants: [], topTenants: 0, topQueues: 0, dependencies: ["api.stripe.com"], topDependencies: 0 });
    expect(labels.dependency("api.stripe.com")).toBe("api.stripe.com");
    expect(labels.dependency("example.org")).toBe(OTHER_LABEL);
    expect(labels.tenantQueue("some-tenant", "default")).toEqual({ tenant: OTHER_LABEL, queue: OTHER_LABEL });
  });

  it("a gauge snapshot of 10,000 tenants keeps the total: the unlabelled ones are summed (or maxed) under other", async () => {
    const labels = new MetricLabels({ tenants: [], topTenants: 5, topQueues: 5, dependencies: [], topDependencies: 0 });
    const registry = new Registry();
    const gauge = new Gauge({ name: "t_jobs", help: "x", labelNames: ["tenant", "queue"], registers: [registry] });
    const oldest = new Gauge({ name: "t_oldest", help: "x", labelNames: ["tenant", "queue"], registers: [registry] });
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ labels: labels.tenantQueue(`t-${i}`, "default", i), value: i }));
    setGaugeSnapshot(gauge, rows);
    setGaugeSnapshot(oldest, rows, "max");
    const values = (await gauge.get()).values;
    expect(values.length).toBeLessThanOrEqual(6);
    expect(values.reduce((sum, v) => sum + v.value, 0)).toBe((9_999 * 10_000) / 2);
    expect((await oldest.get()).values.find((v) => v.labels.tenant === OTHER_LABEL)?.value).toBe(9_999);
    // A second snapshot replaces the first.
    setGaugeSnapshot(gauge, [{ labels: { tenant: OTHER_LABEL, queue: OTHER_LABEL }, value: 1 }]);
    expect((await gauge.get()).values).toHaveLength(1);
  });
});
