// The metrics of docs/observability.md as the running processes export them: a small workload, then
// each series is read from the worker's and the scheduler's /metrics and compared with what happened.
import { describe, expect, it } from "vitest";
import { matching, seriesValue, waitFor, type Sink } from "@tick/testing";
import { scrape } from "./metrics-scrape.js";
import { type ProcessWorld, useProcessWorld } from "./harness.js";

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

describe("worker metrics", () => {
  it("scheduling lag per tenant and queue, dependency calls, webhook deliveries and their lag, and each process's clock offset from the database", async () => {
    const scheduler = await w.startScheduler();
    // This worker's clock runs 3 s ahead (S13): the offset says so; nothing else changes.
    const worker = await w.startWorker({ TICK_TEST_CLOCK_SKEW_MS: "3000" });
    const t = await w.createTenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await w.createJob(t, sink.url(`/work/${i}`), { callbackUrl: sink.url("/done") }));
    await waitFor(() => sink.requests.filter((r) => r.path === "/done").length === 3, { timeoutMs: 20_000, description: "three webhooks delivered" });

    const dependency = new URL(sink.url("/")).host;
    await waitFor(async () => seriesValue(await scrape(worker.healthPort), "tick_webhook_deliveries_total", { tenant: t.id, outcome: "delivered" }) === 3, {
      description: "deliveries counted",
    });
    const metrics = await scrape(worker.healthPort);
    // One lag observation per started attempt, in the tenant's own series (few tenants: each is labelled).
    expect(seriesValue(metrics, "tick_scheduling_lag_seconds_count", { tenant: t.id, queue: "default" })).toBe(3);
    expect(seriesValue(metrics, "tick_scheduling_lag_seconds_bucket", { tenant: t.id, queue: "default", le: "+Inf" })).toBe(3);
    expect(seriesValue(metrics, "tick_scheduling_lag_seconds_sum", { tenant: t.id })).toBeGreaterThanOrEqual(0);
    expect(seriesValue(metrics, "tick_dependency_calls_total", { dependency, result: "healthy" })).toBe(3);
    expect(seriesValue(metrics, "tick_attempts_completed_total", { status: "succeeded" })).toBe(3);
    expect(seriesValue(metrics, "tick_webhook_delivery_lag_seconds_count")).toBe(3);
    expect(seriesValue(metrics, "tick_webhook_delivery_lag_seconds_sum")).toBeGreaterThan(0);
    expect(seriesValue(metrics, "tick_retry_budget_limit_ratio")).toBe(0.2);
    expect(seriesValue(metrics, "tick_store_up", { store: "database" })).toBe(1);
    expect(seriesValue(metrics, "tick_store_up", { store: "redis" })).toBe(1);
    expect(seriesValue(metrics, "tick_clock_offset_seconds")).toBeGreaterThan(2.5);
    expect(seriesValue(metrics, "tick_clock_offset_seconds")).toBeLessThan(3.5);
    expect(Math.abs(seriesValue(await scrape(scheduler.healthPort), "tick_clock_offset_seconds"))).toBeLessThan(0.5);
    // The scheduler dispatched them to this tenant, and its loops run.
    const schedulerMetrics = await scrape(scheduler.healthPort);
    expect(seriesValue(schedulerMetrics, "tick_dispatched_total", { tenant: t.id })).toBe(3);
    expect(seriesValue(schedulerMetrics, "tick_scheduler_loop_runs_total", { loop: "dispatch", outcome: "ok" })).toBeGreaterThan(0);
    expect(seriesValue(schedulerMetrics, "tick_shard_count")).toBe(4);
    expect(seriesValue(schedulerMetrics, "tick_shards_held")).toBe(4);
  });

  it("the attempt slots: capacity, calls held in flight, and slot-seconds that grow while they are held", async () => {
    await w.startScheduler();
    const worker = await w.startWorker({ WORKER_CONCURRENCY: "4" });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    sink.respond((req) => (req.path.startsWith("/held/") ? { status: 200, hold: held } : undefined));
    const t = await w.createTenant();
    for (let i = 0; i < 2; i++) await w.createJob(t, sink.url(`/held/${i}`));
    await waitFor(() => sink.requests.filter((r) => r.path.startsWith("/held/")).length === 2, { timeoutMs: 20_000, description: "both calls in flight" });
    const first = await scrape(worker.healthPort);
    expect(seriesValue(first, "tick_worker_slots", { slot: "call", state: "capacity" })).toBe(4);
    expect(seriesValue(first, "tick_worker_slots", { slot: "start", state: "capacity" })).toBe(4);
    expect(seriesValue(first, "tick_worker_slots", { slot: "call", state: "in_use" })).toBe(2);
    expect(seriesValue(first, "tick_worker_slots", { slot: "call", state: "waiting" })).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    const second = await scrape(worker.healthPort);
    // Two calls held for the 0.5 s between the scrapes: about one slot-second more (timers are not exact).
    const grew = seriesValue(second, "tick_worker_slots_busy_seconds_total", { slot: "call" }) - seriesValue(first, "tick_worker_slots_busy_seconds_total", { slot: "call" });
    expect(grew).toBeGreaterThan(0.9);
    expect(grew).toBeLessThan(1.5);
    expect(seriesValue(second, "tick_worker_slots_waiting_seconds_total", { slot: "call" })).toBe(0);
    release();
    await waitFor(async () => seriesValue(await scrape(worker.healthPort), "tick_attempts_completed_total", { status: "succeeded" }) === 2, { description: "both completed" });
    expect(seriesValue(await scrape(worker.healthPort), "tick_worker_slots", { slot: "call", state: "in_use" })).toBe(0);
  });

  it("a failing dependency: unhealthy calls, its breaker open in tick_breaker_state and tick_breakers_open, its retry budget watched", async () => {
    await w.startScheduler();
    const worker = await w.startWorker({ BREAKER_MIN_REQUESTS: "4", BREAKER_OPEN_FOR: "60s", BREAKER_WINDOW: "30s", BREAKER_RETRY_BUDGET: "1" });
    sink.respond(() => ({ status: 503 }));
    const t = await w.createTenant();
    for (let i = 0; i < 6; i++) await w.createJob(t, sink.url(`/down/${i}`), { maxAttempts: 100 });
    const dependency = new URL(sink.url("/")).host;
    // The breaker gauges are read every 10 s.
    await waitFor(async () => seriesValue(await scrape(worker.healthPort), "tick_breaker_state", { dependency }) === 2, {
      timeoutMs: 30_000,
      description: "the dependency's breaker shown open",
    });
    const metrics = await scrape(worker.healthPort);
    expect(seriesValue(metrics, "tick_breakers_open", { dependency })).toBe(1);
    expect(seriesValue(metrics, "tick_breaker_opened_total", { dependency })).toBeGreaterThanOrEqual(1);
    expect(seriesValue(metrics, "tick_dependency_calls_total", { dependency, result: "unhealthy" })).toBeGreaterThanOrEqual(4);
    expect(seriesValue(metrics, "tick_dependency_calls_total", { dependency, result: "healthy" })).toBe(0);
    // The retry budget of the dependency is watched too (how much of it retries used depends on timing).
    expect(matching(metrics, "tick_retry_budget_used_ratio", { dependency })).toHaveLength(1);
  });
});
