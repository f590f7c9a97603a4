import { describe, expect, it } from "vitest";
import { EnvError } from "@tick/runtime";
import { loadSchedulerEnv } from "./env.js";

const base = { DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/tick", REDIS_URL: "redis://127.0.0.1:6379" };

function problems(env: Record<string, string>) {
  try {
    loadSchedulerEnv(env);
  } catch (err) {
    if (err instanceof EnvError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
    throw err;
  }
  return [];
}

describe("scheduler env", () => {
  it("parses durations and applies defaults", () => {
    const env = loadSchedulerEnv({ ...base, SCHEDULER_LEASE_TTL: "20s", SCHEDULER_LEASE_RENEW_INTERVAL: "5s", TICK_SHARDS: "32" });
    expect(env.SCHEDULER_LEASE_TTL).toBe(20_000);
    expect(env.SCHEDULER_LEASE_RENEW_INTERVAL).toBe(5_000);
    expect(env.TICK_SHARDS).toBe(32);
    expect(env.SCHEDULER_HEALTH_PORT).toBe(9464);
    expect(env.TICK_BIND_HOST).toBe("127.0.0.1"); // health server on loopback unless TICK_BIND_HOST says otherwise
  });

  it("bounds the metric labels: tenant IDs and dependencies always labelled, and how many of the busiest besides", () => {
    const env = loadSchedulerEnv({ ...base, TICK_METRICS_TENANTS: "0b5c6f1e-1111-4a4a-8888-000000000001, 0b5c6f1e-2222-4a4a-8888-000000000002", TICK_METRICS_DEPENDENCIES: "api.stripe.com" });
    expect(env.TICK_METRICS_TENANTS).toEqual(["0b5c6f1e-1111-4a4a-8888-000000000001", "0b5c6f1e-2222-4a4a-8888-000000000002"]);
    expect(env.TICK_METRICS_DEPENDENCIES).toEqual(["api.stripe.com"]);
    expect([env.TICK_METRICS_TOP_TENANTS, env.TICK_METRICS_TOP_QUEUES, env.TICK_METRICS_TOP_DEPENDENCIES]).toEqual([20, 50, 20]);
  });

  it.each([
    [{ SCHEDULER_LEASE_TTL: "soon" }, /^SCHEDULER_LEASE_TTL: /],
    [{ SCHEDULER_LEASE_TTL: "10s", SCHEDULER_LEASE_RENEW_INTERVAL: "6s" }, /^SCHEDULER_LEASE_RENEW_INTERVAL: must be at most half/],
    [{ TICK_SHARDS: "0" }, /^TICK_SHARDS: /],
    [{ SCHEDULER_HEALTH_PORT: "-1" }, /^SCHEDULER_HEALTH_PORT: /],
    [{ TICK_METRICS_TENANTS: "acme" }, /^TICK_METRICS_TENANTS: "acme" is not a tenant ID/],
    [{ TICK_METRICS_TOP_TENANTS: "-1" }, /^TICK_METRICS_TOP_TENANTS: /],
    [{ TICK_METRICS_TOP_DEPENDENCIES: "many" }, /^TICK_METRICS_TOP_DEPENDENCIES: /],
    [{ TICK_SHARDS: "8", TICK_SHARD_REGIONS: "eu:0-7,us:8-15" }, /^TICK_SHARD_REGIONS: "us:8-15": shard 15 does not exist/],
    [{ TICK_SHARD_REGIONS: "eu:0-3,us:3-5" }, /^TICK_SHARD_REGIONS: shard 3 has two home regions/],
    [{ TICK_SHARD_REGIONS: "eu=0-3" }, /^TICK_SHARD_REGIONS: "eu=0-3": use region:shard/],
  ])("refuses %o naming the variable", (extra, message) => {
    const found = problems({ ...base, ...extra });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });
});
