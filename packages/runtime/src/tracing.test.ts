import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { formatTraceparent } from "@tick/core";
import { EnvError, parseEnv } from "./env.js";
import { NO_TRACING, createTracing, tracingConfig, tracingEnvShape, type Tracing } from "./tracing.js";

// Counts the exporters made, whichever encoding: with tracing off there must be none.
const made = vi.hoisted(() => ({ exporters: 0 }));
vi.mock("@opentelemetry/exporter-trace-otlp-http", async (original) => {
  const real = await original<typeof import("@opentelemetry/exporter-trace-otlp-http")>();
  class Counted extends real.OTLPTraceExporter {
    constructor(...args: ConstructorParameters<typeof real.OTLPTraceExporter>) {
      super(...args);
      made.exporters++;
    }
  }
  return { ...real, OTLPTraceExporter: Counted };
});
vi.mock("@opentelemetry/exporter-trace-otlp-proto", async (original) => {
  const real = await original<typeof import("@opentelemetry/exporter-trace-otlp-proto")>();
  class Counted extends real.OTLPTraceExporter {
    constructor(...args: ConstructorParameters<typeof real.OTLPTraceExporter>) {
      super(...args);
      made.exporters++;
    }
  }
  return { ...real, OTLPTraceExporter: Counted };
});

const schema = z.object(tracingEnvShape);
const config = (env: Record<string, string>) => tracingConfig(parseEnv(schema, env), { serviceName: "tick-test", serviceInstanceId: "test:1" });

/** Collects OTLP/HTTP export requests: path, content type and body. */
async function startReceiver() {
  const requests: { path: string; type: string; body: Buffer }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ path: req.url ?? "", type: String(req.headers["content-type"]), body: Buffer.concat(chunks) });
      res.writeHead(200, { "content-type": String(req.headers["content-type"]) }).end(req.headers["content-type"] === "application/json" ? "{}" : "");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

let tracing: Tracing = NO_TRACING;
afterEach(async () => {
  await tracing.shutdown();
  tracing = NO_TRACING;
});

describe("tracing configuration", () => {
  it("is off without an endpoint, and with OTEL_SDK_DISABLED=true", () => {
    expect(config({})).toBeNull();
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toBeNull();
  });

  it("sends to <endpoint>/v1/traces, or to the traces endpoint as given", () => {
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" })).toMatchObject({
      url: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      serviceName: "tick-test",
      sampler: "parentbased_always_on",
      scheduleDelayMs: 5_000,
    });
    expect(
      config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/otlp", OTEL_SERVICE_NAME: "mine" }),
    ).toMatchObject({ url: "https://traces.example/otlp", serviceName: "mine" });
  });

  it("reads OTEL_EXPORTER_OTLP_HEADERS as URL-encoded key=value pairs", () => {
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc, x-team=ops" })?.headers).toEqual({
      authorization: "Bearer abc",
      "x-team": "ops",
    });
  });

  it.each([
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
    ["OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"],
    ["OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"],
    ["OTEL_TRACES_SAMPLER", "sometimes"],
    ["OTEL_TRACES_SAMPLER_ARG", "2"],
  ])("refuses a bad %s with a message naming it", (variable, value) => {
    try {
      parseEnv(schema, { [variable]: value });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(EnvError);
      expect((err as EnvError).problems.map((p) => p.variable)).toEqual([variable]);
    }
  });
});

describe("createTracing", () => {
  it("off: constructs no exporter, records nothing, still gives each span an ID of its parent's trace", async () => {
    made.exporters = 0;
    tracing = await createTracing(null);
    expect(tracing).toBe(NO_TRACING);
    expect(made.exporters).toBe(0);
    const parent = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 1 };
    const span = tracing.startSpan("attempt", { parent });
    expect(span.recording).toBe(false);
    expect(span.context.traceId).toBe(parent.traceId);
    expect(span.context.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.context.spanId).not.toBe(parent.spanId);
  });

  it("on (http/json): exports a child of the remote parent with its attributes, status and links", async () => {
    const receiver = await startReceiver();
    try {
      made.exporters = 0;
      tracing = await createTracing(config({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }));
      expect(tracing.enabled).toBe(true);
      expect(made.exporters).toBe(1);
      const parent = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 1, traceState: "rojo=1" };
      const link = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", flags: 1 };
      const span = tracing.startSpan("attempt", { kind: "client", parent, links: [link], attributes: { "tick.job.id": "j1", "http.response.status_code": 503, skipped: undefined } });
      expect(span.recording).toBe(true);
      expect(span.context).toMatchObject({ traceId: parent.traceId, flags: 1, traceState: "rojo=1" });
      span.fail("HTTP 503");
      span.end();
      const root = tracing.startSpan("create job", { kind: "server" });
      root.end();
      await tracing.forceFlush();
      expect(receiver.requests.map((r) => [r.path, r.type])).toEqual([["/v1/traces", "application/json"]]);
      const body = JSON.parse(receiver.requests[0]!.body.toString("utf8")) as {
        resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[];
      };
      const resource = Object.fromEntries(body.resourceSpans[0]!.resource.attributes.map((a) => [a.key, a.value.stringValue]));
      expect(resource).toMatchObject({ "service.name": "tick-test", "service.instance.id": "test:1" });
      const spans = body.resourceSpans[0]!.scopeSpans[0]!.spans;
      const attempt = spans.find((s) => s.name === "attempt")!;
      expect(attempt).toMatchObject({ traceId: parent.traceId, spanId: span.context.spanId, parentSpanId: parent.spanId, kind: 3, status: { code: 2, message: "HTTP 503" } });
      expect(attempt.links).toMatchObject([{ traceId: link.traceId, spanId: link.spanId }]);
      expect(attempt.attributes).toEqual(
        expect.arrayContaining([
          { key: "tick.job.id", value: { stringValue: "j1" } },
          { key: "http.response.status_code", value: { intValue: 503 } },
        ]),
      );
      expect((attempt.attributes as { key: string }[]).map((a) => a.key)).not.toContain("skipped");
      const created = spans.find((s) => s.name === "create job")!;
      expect(created).toMatchObject({ traceId: root.context.traceId, spanId: root.context.spanId, kind: 2 });
      expect(created.parentSpanId ?? "").toBe("");
    } finally {
      await receiver.close();
    }
  });

  it("on (http/protobuf, the default): exports protobuf to the same path", async () => {
    const receiver = await startReceiver();
    try {
      tracing = await createTracing(config({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }));
      const span = tracing.startSpan("webhook", { kind: "client" });
      span.end();
      await tracing.forceFlush();
      expect(receiver.requests.map((r) => [r.path, r.type])).toEqual([["/v1/traces", "application/x-protobuf"]]);
      // The IDs travel as raw bytes in the protobuf encoding.
      expect(receiver.requests[0]!.body.includes(Buffer.from(span.context.traceId, "hex"))).toBe(true);
      expect(receiver.requests[0]!.body.includes(Buffer.from(span.context.spanId, "hex"))).toBe(true);
    } finally {
      await receiver.close();
    }
  });

  it("follows the parent's sampled flag (parentbased): an unsampled job's spans are not recorded, and keep its flag", async () => {
    const receiver = await startReceiver();
    try {
      tracing = await createTracing(config({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }));
      const parent = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", flags: 0 };
      const span = tracing.startSpan("attempt", { parent });
      expect(span.recording).toBe(false);
      expect(formatTraceparent(span.context)).toMatch(new RegExp(`^00-${parent.traceId}-[0-9a-f]{16}-00$`));
      span.end();
      await tracing.forceFlush();
      expect(receiver.requests).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});
