// The console's metrics (docs/observability.md) as the built console exports them on its side port
// (CONSOLE_METRICS_PORT): API requests by route and status, admission per tenant, the store probe, and
// the doc's table checked against this scrape both ways (as apps/worker/test/metrics-doc.test.ts does
// for the scheduler and worker).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { docMismatches, documentedMetrics, seriesValue, waitFor } from "@tick/testing";
import { jobBody, startConsole, useConsole } from "./harness";

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../docs/observability.md");

const suite = useConsole();
const scrape = async () => {
  const res = await fetch(`http://127.0.0.1:${suite.h.metricsPort}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
};

describe("the console's metrics side server", () => {
  it("serves /metrics, /healthz and /readyz on CONSOLE_METRICS_PORT, with Node's metrics and the store probe; the public port has no /metrics", async () => {
    const side = `http://127.0.0.1:${suite.h.metricsPort}`;
    expect(await (await fetch(`${side}/healthz`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${side}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", checks: ["database", "redis"] });

    const text = await scrape();
    expect(text).toContain('nodejs_heap_size_used_bytes{app="console"}');
    expect(text).toMatch(/^process_cpu_user_seconds_total\{app="console"\} /m);
    // The probe runs once at start, then every 15 s.
    await waitFor(async () => seriesValue(await scrape(), "tick_store_up", { store: "database" }) === 1, { timeoutMs: 10_000, description: "database probed up" });
    const probed = await scrape();
    expect(seriesValue(probed, "tick_store_up", { store: "redis", app: "console" })).toBe(1);
    // Same host as the database here: the offset is a few ms at most.
    expect(Math.abs(seriesValue(probed, "tick_clock_offset_seconds"))).toBeLessThan(1);

    expect((await fetch(`${suite.h.baseUrl}/metrics`)).status).toBe(404);
  });

  it("counts each API request by route name and status, with its duration", async () => {
    const t = await suite.h.createTenant();
    const client = suite.h.client(t.apiKey);
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await client.call("listJobs", {})).status).toBe(200);
    expect((await client.call("getJob", { params: { id: crypto.randomUUID() } })).status).toBe(404);
    expect((await suite.h.client("tick_not_a_key").call("createJob", { body: jobBody() })).status).toBe(401);
    const after = await scrape();

    const delta = (name: string, labels: Record<string, string>) => seriesValue(after, name, labels) - seriesValue(before, name, labels);
    expect(delta("tick_api_requests_total", { route: "listJobs", status: "200" })).toBe(3);
    expect(delta("tick_api_requests_total", { route: "getJob", status: "404" })).toBe(1);
    expect(delta("tick_api_requests_total", { route: "createJob", status: "401" })).toBe(1);
    expect(delta("tick_api_request_duration_seconds_count", { route: "listJobs" })).toBe(3);
    expect(delta("tick_api_request_duration_seconds_sum", { route: "listJobs" })).toBeGreaterThan(0);
    // Every route label is a name of the contract's route table, never a path with an id in it.
    expect(after).not.toMatch(/route="\//);
  });

  it("counts admitted jobs and refusals per tenant: rate limit (single and batch) and pending-job quota", async () => {
    const limited = await suite.h.createTenant({ admissionRate: 0.01, admissionBurst: 2 });
    const capped = await suite.h.createTenant({ maxPendingJobs: 1 });
    const bystander = await suite.h.createTenant();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await suite.h.client(limited.apiKey).call("createJob", { body: jobBody() })).status);
    expect(statuses).toEqual([201, 201, 429]);
    // The bucket is empty now: a batch of three is refused item by item.
    const batch = await suite.h.client(limited.apiKey).call("createJobsBatch", { body: { jobs: [jobBody(), jobBody(), jobBody()] } });
    if (!batch.ok) throw new Error("expected success");
    expect(batch.body.results.map((r) => r.status)).toEqual([429, 429, 429]);
    for (let i = 0; i < 2; i++) statuses.push((await suite.h.client(capped.apiKey).call("createJob", { body: jobBody() })).status);
    expect(statuses.slice(3)).toEqual([201, 429]);
    expect((await suite.h.client(bystander.apiKey).call("createJob", { body: jobBody() })).status).toBe(201);

    const text = await scrape();
    const admitted = (tenant: string) => seriesValue(text, "tick_api_jobs_admitted_total", { tenant });
    const rejected = (tenant: string, reason: string) => seriesValue(text, "tick_api_jobs_rejected_total", { tenant, reason });
    expect([admitted(limited.id), rejected(limited.id, "rate_limit"), rejected(limited.id, "quota")]).toEqual([2, 4, 0]);
    expect([admitted(capped.id), rejected(capped.id, "rate_limit"), rejected(capped.id, "quota")]).toEqual([1, 0, 1]);
    expect([admitted(bystander.id), rejected(bystander.id, "rate_limit"), rejected(bystander.id, "quota")]).toEqual([1, 0, 0]);
    // The refusals are also 429s of their routes.
    expect(seriesValue(text, "tick_api_requests_total", { route: "createJob", status: "429" })).toBeGreaterThanOrEqual(2);
  });

  it("counts admission checks that failed open while Redis did not answer", async () => {
    const t = await suite.h.createTenant({ admissionRate: 1, admissionBurst: 1 });
    const before = seriesValue(await scrape(), "tick_api_admission_fail_open_total");
    suite.h.redisProxy.cut();
    try {
      for (let i = 0; i < 2; i++) expect((await suite.h.client(t.apiKey).call("createJob", { body: jobBody() })).status).toBe(201);
    } finally {
      suite.h.redisProxy.restore();
    }
    const text = await scrape();
    expect(seriesValue(text, "tick_api_admission_fail_open_total") - before).toBe(2);
    expect(seriesValue(text, "tick_api_jobs_admitted_total", { tenant: t.id })).toBe(2);
  });
});

describe("the console's clean stop (NEXT_MANUAL_SIG_HANDLE)", () => {
  it("closes the metrics side server and exits 0", async () => {
    const h = await startConsole({ NEXT_MANUAL_SIG_HANDLE: "true" });
    try {
      expect((await fetch(`http://127.0.0.1:${h.metricsPort}/metrics`)).status).toBe(200);
      expect(await h.process.stop()).toBe(0);
      await expect(fetch(`http://127.0.0.1:${h.metricsPort}/healthz`)).rejects.toThrow();
    } finally {
      await h.stop();
    }
  });
});

describe("docs/observability.md", () => {
  it("lists exactly the tick_ metrics the console exports, with their types and labels", async () => {
    const documented = documentedMetrics(DOC);
    expect(documented.filter((m) => m.processes.includes("console")).length).toBeGreaterThanOrEqual(7);
    // Two jobs past a burst of one: requests, durations, an admitted and a refused job have samples whose labels are checked too.
    const t = await suite.h.createTenant({ admissionRate: 0.01, admissionBurst: 1 });
    for (let i = 0; i < 2; i++) await suite.h.client(t.apiKey).call("createJob", { body: jobBody() });
    const text = await scrape();
    expect(seriesValue(text, "tick_api_jobs_rejected_total", { tenant: t.id, reason: "rate_limit" })).toBe(1);
    expect(docMismatches(text, "console", documented)).toEqual([]);
  });
});
