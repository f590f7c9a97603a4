import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { startStoreProbe } from "./store-probe.js";

const value = async (registry: Registry, name: string, labels: Record<string, string> = {}) =>
  (await registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;

describe("store probe", () => {
  it("exports this process's clock offset from the database clock and whether each store answered", async () => {
    const registry = new Registry();
    // A database whose clock is 5 s behind this process's.
    let databaseUp = true;
    const probe = startStoreProbe({
      registry,
      databaseNow: async () => {
        if (!databaseUp) throw new Error("connection refused");
        return new Date(Date.now() - 5_000);
      },
      pingRedis: () => Promise.reject(new Error("down")),
      intervalMs: 3_600_000,
    });
    try {
      // Not measured yet (the first probe is still on its way): NaN, never a false "in sync" 0.
      expect(await value(registry, "tick_clock_offset_seconds")).toBeNaN();
      await probe.probe();
      expect(await value(registry, "tick_clock_offset_seconds")).toBeCloseTo(5, 1);
      expect(await value(registry, "tick_store_up", { store: "database" })).toBe(1);
      expect(await value(registry, "tick_store_up", { store: "redis" })).toBe(0);
      databaseUp = false;
      await probe.probe();
      expect(await value(registry, "tick_store_up", { store: "database" })).toBe(0);
      // The last offset measured stays: a database outage says nothing about the clock.
      expect(await value(registry, "tick_clock_offset_seconds")).toBeCloseTo(5, 1);
    } finally {
      probe.stop();
    }
  });

  it("counts a store that does not answer within the timeout as down", async () => {
    const registry = new Registry();
    const probe = startStoreProbe({ registry, databaseNow: () => new Promise(() => {}), pingRedis: async () => "PONG", intervalMs: 3_600_000, timeoutMs: 50 });
    try {
      await probe.probe();
      expect(await value(registry, "tick_store_up", { store: "database" })).toBe(0);
      expect(await value(registry, "tick_store_up", { store: "redis" })).toBe(1);
      // A database that never answered gave no reading: the offset stays unmeasured.
      expect(await value(registry, "tick_clock_offset_seconds")).toBeNaN();
    } finally {
      probe.stop();
    }
  });
});
