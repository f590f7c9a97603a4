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

  it.each([
    [{ SCHEDULER_LEASE_TTL: "soon" }, /^SCHEDULER_LEASE_TTL: /],
    [{ SCHEDULER_LEASE_TTL: "10s", SCHEDULER_LEASE_RENEW_INTERVAL: "6s" }, /^SCHEDULER_LEASE_RENEW_INTERVAL: must be at most half/],
    [{ TICK_SHARDS: "0" }, /^TICK_SHARDS: /],
    [{ SCHEDULER_HEALTH_PORT: "-1" }, /^SCHEDULER_HEALTH_PORT: /],
  ])("refuses %o naming the variable", (extra, message) => {
    const found = problems({ ...base, ...extra });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });
});
