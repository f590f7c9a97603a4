import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createTestRedis, waitFor } from "@tick/testing";
import { createBreakers, heldByTenant, type BreakerKey } from "./index.js";

const test = createTestRedis();
const redis = new Redis(test.url);
afterAll(async () => {
  await test.cleanup();
  redis.disconnect();
});

const TENANT = "0b5c6f1e-1111-4a4a-8888-000000000001";
const OTHER = "0b5c6f1e-2222-4a4a-8888-000000000002";
/** The test tenant's breaker for a dependency. */
const k = (dependency: string, tenantId = TENANT): BreakerKey => ({ tenantId, dependency });

const policy = { windowMs: 10_000, bucketMs: 1_000, minRequests: 4, failureRate: 0.5, openMs: 300, probeTimeoutMs: 5_000, retryBudget: 0.25 };

describe("circuit breaker", () => {
  it("opens on the failure rate, holds, lets one probe through half-open, and closes on its success", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    const dep = k("api.example.com");
    for (let i = 0; i < 3; i++) expect(await b.record(dep, false)).toBe("closed"); // below minRequests
    expect(await b.record(dep, false)).toBe("opened");
    expect(await b.record(dep, false)).toBe("open"); // already open: not opened again
    expect(await b.openDependencies()).toEqual([dep]);
    // A reader with another policy (a scheduler) agrees on when it half-opens: the period was fixed at opening.
    expect(await createBreakers({ redis, prefix: test.prefix, policy: { ...policy, openMs: 60_000 } }).openDependencies()).toEqual([dep]);
    expect(await b.admit(dep, false)).toBe("open");

    await waitFor(async () => (await b.state(dep)) === "half_open", { timeoutMs: 5_000, description: "half-open after openMs" });
    expect(await b.openDependencies()).toEqual([]);
    expect(await b.admit(dep, false)).toBe("allowed"); // the probe
    expect(await b.admit(dep, false)).toBe("probe_busy"); // one at a time
    expect(await b.record(dep, true)).toBe("closed");
    expect(await b.admit(dep, false)).toBe("allowed");
  });

  it("re-opens when the half-open probe fails", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    const dep = k("flaky:8080");
    for (let i = 0; i < 4; i++) await b.record(dep, false);
    await waitFor(async () => (await b.state(dep)) === "half_open", { timeoutMs: 5_000, description: "half-open" });
    expect(await b.admit(dep, false)).toBe("allowed");
    expect(await b.record(dep, false)).toBe("opened");
    expect(await b.openDependencies()).toContainEqual(dep);
  });

  it("successes keep it closed; other dependencies are unaffected", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    for (let i = 0; i < 10; i++) await b.record(k("healthy"), true);
    for (let i = 0; i < 3; i++) await b.record(k("healthy"), false);
    expect(await b.state(k("healthy"))).toBe("closed");
    expect(await b.state(k("never-seen"))).toBe("closed");
  });

  it("is per tenant: one tenant's failures against a dependency never open another tenant's breaker for it", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy: { ...policy, openMs: 60_000 } });
    for (let i = 0; i < 4; i++) await b.record(k("shared.example"), false);
    expect(await b.state(k("shared.example"))).toBe("open");
    expect(await b.state(k("shared.example", OTHER))).toBe("closed");
    expect(await b.admit(k("shared.example", OTHER), false)).toBe("allowed");
    expect((await b.inspect(OTHER, ["shared.example"])).get("shared.example")).toEqual({ state: "closed", openUntil: null });
    const open = await b.openDependencies();
    expect(open).toContainEqual(k("shared.example"));
    expect(open).not.toContainEqual(k("shared.example", OTHER));
    expect(heldByTenant(open).get(TENANT)).toContain("shared.example");
    expect(heldByTenant(open).get(OTHER)).toBeUndefined();
  });

  it("drops an open breaker named without a tenant (from a build whose breakers were shared) from the open set", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    await redis.sadd(`${test.prefix}:breakers:open`, "legacy.example");
    expect((await b.openDependencies()).map((x) => x.dependency)).not.toContain("legacy.example");
    expect(await redis.sismember(`${test.prefix}:breakers:open`, "legacy.example")).toBe(0);
  });

  it("caps retries at the budget's share of the dependency's attempts", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    const dep = k("budgeted");
    for (let i = 0; i < 6; i++) expect(await b.admit(dep, false)).toBe("allowed");
    expect(await b.admit(dep, true)).toBe("allowed"); // retries 1 of 7 attempts (14%)
    expect(await b.admit(dep, true)).toBe("allowed"); // 2 of 8 = 25%: at the budget, not above
    expect(await b.admit(dep, true)).toBe("retry_budget"); // 3 of 9 would be 33%
    expect(await b.admit(dep, false)).toBe("allowed"); // first attempts are never budgeted
    expect(await b.admit(dep, true)).toBe("retry_budget"); // 3 of 10 would still be 30%
  });
});

describe("inspect", () => {
  it("reads several breakers in one call without changing them: closed, open with its end, half-open once the open period passed", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    for (let i = 0; i < 4; i++) await b.record(k("down.example"), false);
    const before = Date.now();
    const views = await b.inspect(TENANT, ["down.example", "fine.example"]);
    expect(views.get("fine.example")).toEqual({ state: "closed", openUntil: null });
    const open = views.get("down.example")!;
    expect(open.state).toBe("open");
    expect(open.openUntil).toBeGreaterThan(before - 1_000);
    expect(open.openUntil).toBeLessThanOrEqual(before + policy.openMs + 1_000);
    await waitFor(async () => (await b.inspect(TENANT, ["down.example"])).get("down.example")?.state === "half_open", { timeoutMs: 5_000, description: "shown half-open" });
    expect((await b.inspect(TENANT, ["down.example"])).get("down.example")).toEqual({ state: "half_open", openUntil: null });
    // Only shown: the stored state is still open (the open set still lists it) until someone asks for real.
    expect(await redis.hget(`${test.prefix}:breaker:${TENANT}/down.example`, "state")).toBe("open");
    expect(await b.inspect(TENANT, [])).toEqual(new Map());
  });
});

describe("windowStats", () => {
  it("reads several breakers' states and window figures in one call, in order, without changing them (for the worker's metrics)", async () => {
    const b = createBreakers({ redis, prefix: test.prefix, policy });
    const down = k("stats-down.example");
    const retried = k("stats-retried.example");
    for (let i = 0; i < 4; i++) await b.record(down, false);
    for (let i = 0; i < 3; i++) await b.admit(retried, false);
    await b.admit(retried, true);
    await b.record(retried, true);
    const [d, r, never] = await b.windowStats([down, retried, k("stats-never.example")]);
    expect(d).toMatchObject({ state: "open", ok: 0, fail: 4 });
    expect(r).toEqual({ state: "closed", ok: 1, fail: 0, attempts: 4, retries: 1 });
    expect(never).toEqual({ state: "closed", ok: 0, fail: 0, attempts: 0, retries: 0 });
    expect(await redis.hget(`${test.prefix}:breaker:${TENANT}/stats-down.example`, "state")).toBe("open");
    expect(await b.windowStats([])).toEqual([]);
  });
});
