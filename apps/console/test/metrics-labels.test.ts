// The console's per-tenant admission metrics go through runtime's bounded labels: 10,000 tenants do
// not make 10,000 series. The metrics module is used directly (no server needed); the bounding itself is
// tested in packages/runtime/src/bounded-labels.test.ts.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { AppError } from "@tick/core";
import { MetricLabels } from "@tick/runtime";
import { samples, seriesValue } from "@tick/testing";
import { createConsoleMetrics, tallyAdmission } from "../src/server/metrics";

describe("the console's admission metrics", () => {
  it("10,000 tenants make at most allow-list + top + 1 tenant series, and the bursting tenant is one of them", async () => {
    let now = 0;
    const registry = new Registry();
    const allowed = "00000000-0000-4000-8000-000000000001";
    const labels = new MetricLabels({ tenants: [allowed], topTenants: 20, topQueues: 50, dependencies: [], topDependencies: 20 }, { rankEveryMs: 60_000, now: () => now });
    const metrics = createConsoleMetrics(registry, labels);
    const burst = "tenant-burst";
    for (let minute = 0; minute < 3; minute++) {
      for (let i = 0; i < 10_000; i++) metrics.admission(`tenant-${i}`, { admitted: 1, rateLimited: i % 2, overQuota: i % 3 === 0 ? 1 : 0 });
      metrics.admission(burst, { admitted: 500, rateLimited: 5_000, overQuota: 0 });
      metrics.admission(allowed, { admitted: 1, rateLimited: 0, overQuota: 0, debounced: 0 });
      now += 60_000; // the next admission ranks
      await new Promise((r) => setTimeout(r, 0)); // evicted series are removed asynchronously
    }
    metrics.admission("tenant-0", { admitted: 1, rateLimited: 0, overQuota: 0, debounced: 0 });
    await new Promise((r) => setTimeout(r, 0));

    const text = await registry.metrics();
    const tenantsOf = (name: string) => new Set(samples(text).filter((s) => s.name === name).map((s) => s.labels.tenant));
    const admitted = tenantsOf("tick_api_jobs_admitted_total");
    expect(admitted.size).toBeLessThanOrEqual(1 + 20 + 1);
    expect(tenantsOf("tick_api_jobs_rejected_total").size).toBeLessThanOrEqual(1 + 20 + 1);
    expect(admitted.has(burst)).toBe(true);
    expect(admitted.has(allowed)).toBe(true);
    expect(admitted.has("other")).toBe(true);
    // At most two reasons per tenant value.
    expect(samples(text).filter((s) => s.name === "tick_api_jobs_rejected_total").length).toBeLessThanOrEqual(2 * (1 + 20 + 1));
  });

  it("tallies a create request's outcomes: created jobs, rate-limit and quota refusals, debounced creates; replays and other errors are none of them", () => {
    const refused = (code: "rate_limited" | "quota_exceeded" | "validation_failed") => ({ status: 429, cause: new AppError(code) });
    expect(
      tallyAdmission([
        { status: 201 },
        { status: 201 },
        { status: 200 },
        { status: 200, debouncedInto: "j", replayed: false },
        { status: 200, debouncedInto: "j", replayed: true },
        refused("rate_limited"),
        refused("quota_exceeded"),
        refused("quota_exceeded"),
        { status: 422, cause: new AppError("validation_failed") },
      ]),
    ).toEqual({ admitted: 2, rateLimited: 1, overQuota: 2, debounced: 1 });
  });

  it("counts requests by route and status, and a fail-open admission", async () => {
    const registry = new Registry();
    const metrics = createConsoleMetrics(registry);
    metrics.request("createJob", 201, 0.02);
    metrics.request("createJob", 429, 0.001);
    metrics.request("createJob", 201, 0.03);
    metrics.admissionFailedOpen();
    const text = await registry.metrics();
    const value = (name: string, labels: Record<string, string> = {}) => seriesValue(text, name, labels);
    expect(value("tick_api_requests_total", { route: "createJob", status: "201" })).toBe(2);
    expect(value("tick_api_requests_total", { route: "createJob", status: "429" })).toBe(1);
    expect(value("tick_api_request_duration_seconds_count", { route: "createJob" })).toBe(3);
    expect(value("tick_api_request_duration_seconds_bucket", { route: "createJob", le: "0.025" })).toBe(2);
    expect(value("tick_api_admission_fail_open_total")).toBe(1);
  });
});
