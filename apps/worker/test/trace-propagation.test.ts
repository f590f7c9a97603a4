import { describe, expect, it } from "vitest";
import { startOtlpReceiver, waitFor, type Sink } from "@tick/testing";
import { type ProcessWorld, useProcessWorld } from "./harness.js";

// Tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) unless a test says otherwise: the headers still carry each job's trace.
let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;
const at = (path: string) => sink.requests.filter((r) => r.path === path);
const parts = (header: unknown) => {
  const m = TRACEPARENT.exec(String(header));
  if (!m) throw new Error(`not a traceparent: ${String(header)}`);
  return { traceId: m[1]!, spanId: m[2]!, flags: m[3]! };
};

describe("W3C trace context on the target request and the completion webhook", () => {
  it("every attempt sends the job's trace with a span ID of its own, and the webhook joins the same trace", async () => {
    await w.startScheduler();
    await w.startWorker();
    const t = await w.createTenant();
    // The first attempt fails (500), the second succeeds: two attempts of one job.
    sink.respond((req, i) => (req.path === "/work" && i === 0 ? { status: 500 } : undefined));
    const jobId = await w.createJob(t, sink.url("/work"), {
      maxAttempts: 3,
      callbackUrl: sink.url("/done"),
      traceparent: `00-${TRACE}-${PARENT}-01`,
      tracestate: "rojo=00f067aa0ba902b7",
      // Stored before the API reserved the name: the attempt's own header wins, there is only one.
      headers: { TraceParent: "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01" },
    });
    await waitFor(() => at("/done").length === 1, { description: "the completion webhook" });
    const calls = at("/work");
    expect(calls).toHaveLength(2);
    const sent = calls.map((c) => parts(c.headers.traceparent));
    expect(sent.map((s) => [s.traceId, s.flags])).toEqual([
      [TRACE, "01"],
      [TRACE, "01"],
    ]);
    // A new span per attempt, neither of them the caller's.
    expect(new Set([...sent.map((s) => s.spanId), PARENT]).size).toBe(3);
    expect(calls.map((c) => c.headers.tracestate)).toEqual(["rojo=00f067aa0ba902b7", "rojo=00f067aa0ba902b7"]);
    expect(calls.map((c) => c.attemptNumber)).toEqual(["1", "2"]);

    const hook = at("/done")[0]!;
    const hookTrace = parts(hook.headers.traceparent);
    expect(hookTrace.traceId).toBe(TRACE);
    expect([...sent.map((s) => s.spanId), PARENT]).not.toContain(hookTrace.spanId);
    expect(hook.headers.tracestate).toBe("rojo=00f067aa0ba902b7");
    expect(((await w.pool.query(`SELECT traceparent FROM webhook_deliveries WHERE job_id = $1`, [jobId])).rows as { traceparent: string }[])).toEqual([
      { traceparent: `00-${TRACE}-${PARENT}-01` },
    ]);
  });

  it("a job created without one has a trace of its own, started by the database, and an unsampled trace stays unsampled", async () => {
    await w.startScheduler();
    await w.startWorker();
    const t = await w.createTenant();
    const fresh = await w.createJob(t, sink.url("/fresh"));
    const unsampled = await w.createJob(t, sink.url("/unsampled"), { traceparent: `00-${TRACE}-${PARENT}-00` });
    await waitFor(() => at("/fresh").length === 1 && at("/unsampled").length === 1, { description: "both calls" });
    const { rows } = await w.pool.query<{ id: string; traceparent: string; tracestate: string | null }>(`SELECT id, traceparent, tracestate FROM jobs WHERE id = $1`, [fresh]);
    const stored = parts(rows[0]!.traceparent);
    expect(stored.flags).toBe("01");
    expect(rows[0]!.tracestate).toBeNull();
    const sent = parts(at("/fresh")[0]!.headers.traceparent);
    expect(sent.traceId).toBe(stored.traceId);
    expect(sent.spanId).not.toBe(stored.spanId);
    expect(at("/fresh")[0]!.headers.tracestate).toBeUndefined();
    expect(parts(at("/unsampled")[0]!.headers.traceparent)).toMatchObject({ traceId: TRACE, flags: "00" });
    expect(unsampled).not.toBe(fresh);
  });

  it("tracing on: a stopping worker exports the spans it still holds before it exits", async () => {
    const receiver = await startOtlpReceiver();
    try {
      // An export delay far longer than the test: only the shutdown's export can deliver the span.
      const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "60000" };
      await w.startScheduler();
      const worker = await w.startWorker(otel);
      const t = await w.createTenant();
      const jobId = await w.createJob(t, sink.url("/traced"), { traceparent: `00-${TRACE}-${PARENT}-01` });
      await waitFor(async () => (await w.job(jobId)).status === "succeeded", { description: "the job succeeded" });
      expect(receiver.spans).toEqual([]);
      expect(await worker.stop(10_000)).toBe(0);
      const attempt = receiver.spans.find((s) => s.name === "attempt");
      expect(attempt).toMatchObject({ service: "tick-worker", traceId: TRACE, parentSpanId: PARENT, spanId: parts(at("/traced")[0]!.headers.traceparent).spanId });
      expect(attempt?.attributes["tick.job.id"]).toBe(jobId);
    } finally {
      await receiver.close();
    }
  });
});
