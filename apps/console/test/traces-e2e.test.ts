import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startOtlpReceiver, startProcess, startSink, waitFor, type OtlpReceiver, type RunningProcess, type Sink, type SinkRequest } from "@tick/testing";
import { startConsole, type ConsoleHarness, type TestTenant } from "./harness";

// One job's trace end to end, with tracing on in every process: the console, a scheduler and a worker
// export their spans over OTLP/HTTP (JSON) to a local receiver; a local sink is the job's target and
// its callback URL. The spans must form one connected trace: the caller's span → "create job" (console)
// → "attempt" (worker) and "webhook" (worker), with the IDs the sink received as traceparent.

const appsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER = "b7ad6b7169203331";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;

let receiver: OtlpReceiver;
let h: ConsoleHarness;
let tenant: TestTenant;
let sink: Sink;
const processes: RunningProcess[] = [];

async function startApp(app: "scheduler" | "worker", env: Record<string, string>) {
  const healthPort = await freePort();
  const proc = startProcess(process.execPath, [path.join(appsDir, app, "dist/main.js")], {
    env: { ...process.env, ...env, [app === "scheduler" ? "SCHEDULER_HEALTH_PORT" : "WORKER_HEALTH_PORT"]: String(healthPort) },
  });
  processes.push(proc);
  await waitFor(async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => null))?.ok, {
    timeoutMs: 30_000,
    description: `${app} ready (output: ${proc.output().slice(-400)})`,
  });
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  sink = await startSink();
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "100" };
  h = await startConsole({ TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8", ...otel });
  tenant = await h.createTenant();
  const shared = { ...otel, DATABASE_URL: h.db.url, REDIS_URL: h.redis.url, TICK_REDIS_PREFIX: h.redis.prefix, LOG_LEVEL: "warn", TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8" };
  await startApp("scheduler", shared);
  await startApp("worker", shared);
}, 120_000);

afterAll(async () => {
  for (const p of processes) await p.stop(5_000);
  await h?.stop();
  await sink?.close();
  await receiver?.close();
});

async function createJob(name: string, headers: Record<string, string>) {
  const res = await fetch(`${h.baseUrl}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ target: { url: sink.url(`/target/${name}`), body: "{}" }, callbackUrl: sink.url(`/hook/${name}`) }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; trace: { traceId: string; traceparent: string; tracestate: string | null } };
}

const header = (r: SinkRequest | undefined, name: string) => String(r?.headers[name] ?? "");
const spanIdOf = (traceparent: string) => TRACEPARENT.exec(traceparent)?.[2];

/** Waits until the receiver holds the three spans of the job and returns them. */
async function spansOf(jobId: string, traceId: string) {
  return waitFor(
    () => {
      const ofTrace = receiver.spans.filter((s) => s.traceId === traceId);
      const create = ofTrace.find((s) => s.name === "create job" && s.attributes["tick.job.id"] === jobId);
      const attempt = ofTrace.find((s) => s.name === "attempt" && s.attributes["tick.job.id"] === jobId);
      const webhook = ofTrace.find((s) => s.name === "webhook" && s.attributes["tick.job.id"] === jobId);
      return create && attempt && webhook ? { create, attempt, webhook, ofTrace } : null;
    },
    { timeoutMs: 30_000, description: `the spans of job ${jobId} (received: ${receiver.spans.map((s) => `${s.service}/${s.name}`).join(", ")})` },
  );
}

describe("one job's trace, end to end over OTLP", () => {
  it("connects the caller's span → create job → attempt and webhook, with the IDs the target and the callback received", async () => {
    const job = await createJob("a", { traceparent: `00-${TRACE}-${CALLER}-01`, tracestate: "tenant=abc" });
    expect(job.trace).toMatchObject({ traceId: TRACE, tracestate: "tenant=abc" });
    expect(job.trace.traceparent).toMatch(TRACEPARENT);
    const jobSpan = spanIdOf(job.trace.traceparent)!;
    // The job's span is the console's own (a child of the caller's), not the caller's.
    expect(jobSpan).not.toBe(CALLER);

    await waitFor(() => sink.requests.some((r) => r.path === "/target/a") && sink.requests.some((r) => r.path === "/hook/a"), {
      timeoutMs: 30_000,
      description: "the target call and the webhook",
    });
    const target = sink.requests.find((r) => r.path === "/target/a");
    const hook = sink.requests.find((r) => r.path === "/hook/a");
    expect(header(target, "traceparent")).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    expect(header(hook, "traceparent")).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    expect(header(target, "tracestate")).toBe("tenant=abc");
    expect(header(hook, "tracestate")).toBe("tenant=abc");

    const { create, attempt, webhook } = await spansOf(job.id, TRACE);
    // create job: the console's server span, a child of the caller's span; its ID is the job's.
    expect(create).toMatchObject({ service: "tick-console", kind: SERVER, parentSpanId: CALLER, spanId: jobSpan, statusCode: 0 });
    expect(create.attributes).toMatchObject({ "tick.tenant.id": tenant.id, "http.response.status_code": 201, "http.route": "/api/v1/jobs" });
    // attempt: the worker's client span, a child of the job's span, whose IDs are the traceparent the target got.
    expect(attempt).toMatchObject({ service: "tick-worker", kind: CLIENT, parentSpanId: jobSpan, spanId: spanIdOf(header(target, "traceparent")) });
    expect(attempt.attributes).toMatchObject({
      "tick.tenant.id": tenant.id,
      "tick.job.id": job.id,
      "tick.attempt.id": header(target, "tick-attempt-id"),
      "tick.attempt.number": 1,
      "tick.fencing_token": header(target, "tick-fencing-token"),
      "http.request.method": "POST",
      "http.response.status_code": 200,
      "server.address": "127.0.0.1",
    });
    // webhook: a child of the job's span too, whose IDs are the traceparent the callback got.
    expect(webhook).toMatchObject({ service: "tick-worker", kind: CLIENT, parentSpanId: jobSpan, spanId: spanIdOf(header(hook, "traceparent")) });
    expect(webhook.attributes).toMatchObject({ "tick.tenant.id": tenant.id, "tick.webhook.event": "job.succeeded", "tick.webhook.try": 1, "http.response.status_code": 200 });

    // The scheduler's dispatch span that published the attempt: the attempt links to it.
    expect(attempt.links).toHaveLength(1);
    const dispatch = await waitFor(() => receiver.spans.find((s) => s.spanId === attempt.links[0]!.spanId), { description: "the dispatch span" });
    expect(dispatch).toMatchObject({ service: "tick-scheduler", name: "dispatch", kind: PRODUCER, traceId: attempt.links[0]!.traceId, parentSpanId: "" });
    expect(Number(dispatch.attributes["tick.dispatch.attempts"])).toBeGreaterThanOrEqual(1);
    expect(receiver.refused()).toBe(0);
  });

  it("a request without a traceparent (or with a malformed one) starts the job's trace at the create job span", async () => {
    for (const [name, headers] of [
      ["b", {}],
      ["c", { traceparent: "00-not-a-valid-traceparent" }],
    ] as const) {
      const job = await createJob(name, headers);
      expect(job.trace.traceId).not.toBe(TRACE);
      const { create, attempt, webhook } = await spansOf(job.id, job.trace.traceId);
      expect(create).toMatchObject({ parentSpanId: "", spanId: spanIdOf(job.trace.traceparent) });
      expect([attempt.parentSpanId, webhook.parentSpanId]).toEqual([create.spanId, create.spanId]);
      const target = sink.requests.find((r) => r.path === `/target/${name}`);
      expect(spanIdOf(header(target, "traceparent"))).toBe(attempt.spanId);
    }
  });
});
