import { describe, expect, it } from "vitest";
import { EnvError } from "@tick/runtime";
import { loadWorkerEnv } from "./env.js";

const base = { DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/tick", REDIS_URL: "redis://127.0.0.1:6379" };

function problems(env: Record<string, string>) {
  try {
    loadWorkerEnv(env);
  } catch (err) {
    if (err instanceof EnvError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  return [];
}

describe("worker env", () => {
  it("parses durations and applies defaults", () => {
    const env = loadWorkerEnv({ ...base, WORKER_LEASE_TTL: "1m", WORKER_HEARTBEAT_INTERVAL: "15s" });
    expect(env.WORKER_LEASE_TTL).toBe(60_000);
    expect(env.WORKER_HEARTBEAT_INTERVAL).toBe(15_000);
    expect(env.WORKER_CONCURRENCY).toBe(50);
    expect(env.TICK_BIND_HOST).toBe("127.0.0.1"); // health server on loopback unless TICK_BIND_HOST says otherwise
  });

  it("bounds the metric labels: tenant IDs and dependencies always labelled, and how many of the busiest besides", () => {
    const env = loadWorkerEnv({ ...base, TICK_METRICS_TENANTS: "0b5c6f1e-1111-4a4a-8888-000000000001, 0b5c6f1e-2222-4a4a-8888-000000000002", TICK_METRICS_DEPENDENCIES: "api.stripe.com" });
    expect(env.TICK_METRICS_TENANTS).toEqual(["0b5c6f1e-1111-4a4a-8888-000000000001", "0b5c6f1e-2222-4a4a-8888-000000000002"]);
    expect(env.TICK_METRICS_DEPENDENCIES).toEqual(["api.stripe.com"]);
    expect([env.TICK_METRICS_TOP_TENANTS, env.TICK_METRICS_TOP_QUEUES, env.TICK_METRICS_TOP_DEPENDENCIES]).toEqual([20, 50, 20]);
  });

  it.each([
    [{ WORKER_LEASE_TTL: "30s", WORKER_HEARTBEAT_INTERVAL: "20s" }, /^WORKER_HEARTBEAT_INTERVAL: must be at most a third/],
    [{ WORKER_CONCURRENCY: "lots" }, /^WORKER_CONCURRENCY: /],
    [{ DATABASE_URL: "redis://x" }, /^DATABASE_URL: must be a URL like postgresql:/],
    [{ TICK_METRICS_TENANTS: "acme" }, /^TICK_METRICS_TENANTS: "acme" is not a tenant ID/],
    [{ TICK_METRICS_TOP_TENANTS: "-1" }, /^TICK_METRICS_TOP_TENANTS: /],
    [{ TICK_METRICS_TOP_DEPENDENCIES: "many" }, /^TICK_METRICS_TOP_DEPENDENCIES: /],
  ])("refuses %o naming the variable", (extra, message) => {
    const found = problems({ ...base, ...extra });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });
});
