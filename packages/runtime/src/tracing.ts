import { childTraceContext, type TraceContext } from "@tick/core";
import { z } from "zod";
import type { Logger } from "./logger.js";

/*
 * OpenTelemetry traces (docs/observability.md, "Traces"), off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The SDK is loaded only then (dynamic imports), so a process
 * without it constructs no provider, processor or exporter and does no SDK work per job: NO_TRACING's
 * spans only mint the IDs a job's trace propagates with (a few random bytes from a pool).
 *
 * The provider is this process's own, not registered globally, and parents are passed explicitly: no
 * context manager, no automatic instrumentation (Next.js would otherwise trace every request it serves).
 */

export type SpanKind = "server" | "client" | "producer" | "consumer" | "internal";
export type SpanAttributes = Record<string, string | number | boolean | null | undefined>;

export interface StartSpanOptions {
  kind?: SpanKind;
  /** The span's parent (a remote context: an incoming traceparent, a job's stored one); none: a new trace. */
  parent?: TraceContext | null;
  /** Spans this one relates to without being their child (a dispatch batch, messaging style). */
  links?: readonly TraceContext[];
  attributes?: SpanAttributes;
}

export interface TickSpan {
  /** This span's identity, to propagate: a `traceparent` made from it names this span as the parent. */
  readonly context: TraceContext;
  /** Whether the span is recorded (exported); false when tracing is off or the sampler dropped it. */
  readonly recording: boolean;
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span failed (status ERROR) with a short message. */
  fail(message: string): void;
  end(): void;
}

export interface Tracing {
  /** True when spans are exported (an OTLP endpoint is configured). */
  readonly enabled: boolean;
  startSpan(name: string, options?: StartSpanOptions): TickSpan;
  /** Exports what is buffered (tests; shutdown does it too). */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Tracing off: spans are not recorded, but each still gets a span ID of its parent's trace to propagate. */
export const NO_TRACING: Tracing = {
  enabled: false,
  startSpan: (_name, options) => ({
    context: childTraceContext(options?.parent),
    recording: false,
    setAttributes: () => {},
    fail: () => {},
    end: () => {},
  }),
  forceFlush: async () => {},
  shutdown: async () => {},
};

export const TRACE_SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export interface TracingConfig {
  serviceName: string;
  /** This process's identity (service.instance.id): SCHEDULER_ID, WORKER_ID, ... */
  serviceInstanceId?: string;
  /** The traces URL the exporter POSTs to (…/v1/traces). */
  url: string;
  protocol: "http/protobuf" | "http/json";
  headers: Record<string, string>;
  sampler: TraceSampler;
  /** The ratio of the *traceidratio samplers (0..1). */
  samplerRatio: number;
  /** Longest a finished span waits in the batch before it is exported. */
  scheduleDelayMs: number;
}

const httpUrl = z.string().refine(
  (value) => {
    try {
      return ["http:", "https:"].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  },
  { message: "must be an http(s) URL like http://otel-collector:4318" },
);

/**
 * OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs, comma-separated, values URL-encoded (the OpenTelemetry
 * convention), e.g. `authorization=Bearer%20abc,x-tenant=ops`.
 */
const otlpHeaders = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const headers: Record<string, string> = {};
    for (const pair of text.split(",")) {
      if (pair.trim() === "") continue;
      const eq = pair.indexOf("=");
      const key = pair.slice(0, eq).trim();
      if (eq <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
        ctx.addIssue({ code: "custom", message: `"${pair.trim()}" is not key=value with a header name as key` });
        continue;
      }
      try {
        headers[key] = decodeURIComponent(pair.slice(eq + 1).trim());
      } catch {
        ctx.addIssue({ code: "custom", message: `the value of "${key}" is not URL-encoded text` });
      }
    }
    return headers;
  });

/**
 * The OpenTelemetry variables Tick reads (the standard names; the rest of the SDK's variables are not
 * read). Spread into each process's env schema (serviceEnvShape for the scheduler and worker, the
 * console's own schema).
 */
export const tracingEnvShape = {
  /** Base URL of an OTLP/HTTP receiver (an OpenTelemetry Collector, Jaeger, Tempo…); spans go to <url>/v1/traces. Unset: tracing is off. */
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  /** The traces URL itself (used as given), instead of OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  /** OTLP encoding over HTTP: http/protobuf (the default) or http/json. gRPC is not supported. */
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(["http/protobuf", "http/json"], { error: "must be http/protobuf or http/json (grpc is not supported: use the receiver's HTTP port, usually 4318)" })
    .default("http/protobuf"),
  /** Headers sent with every export (authentication), key=value pairs comma-separated, values URL-encoded. */
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders,
  /** service.name of this process's spans; default tick-console, tick-scheduler, tick-worker. */
  OTEL_SERVICE_NAME: z.string().min(1).max(200).optional(),
  /** Which traces are recorded (OpenTelemetry sampler names). parentbased_*: follow the sampled flag of the job's trace. */
  OTEL_TRACES_SAMPLER: z.enum(TRACE_SAMPLERS).default("parentbased_always_on"),
  /** The ratio of the traceidratio samplers, 0 to 1. */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /** Milliseconds between two exports of the finished spans (the batch span processor's delay). */
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(1).max(60_000).default(5_000),
  /** "true" turns tracing off even when an endpoint is set. */
  OTEL_SDK_DISABLED: z.enum(["true", "false"]).default("false"),
};

/** What tracingConfig reads from a parsed env that spread tracingEnvShape in. */
export interface TracingEnv {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" | "http/json";
  OTEL_EXPORTER_OTLP_HEADERS: Record<string, string>;
  OTEL_SERVICE_NAME?: string | undefined;
  OTEL_TRACES_SAMPLER: TraceSampler;
  OTEL_TRACES_SAMPLER_ARG: number;
  OTEL_BSP_SCHEDULE_DELAY: number;
  OTEL_SDK_DISABLED: "true" | "false";
}

/** The exporter's configuration, or null when tracing is off (no endpoint, or OTEL_SDK_DISABLED=true). */
export function tracingConfig(env: TracingEnv, defaults: { serviceName: string; serviceInstanceId?: string }): TracingConfig | null {
  if (env.OTEL_SDK_DISABLED === "true") return null;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : `${base.replace(/\/+$/, "")}/v1/traces`);
  if (url === undefined) return null;
  return {
    serviceName: env.OTEL_SERVICE_NAME ?? defaults.serviceName,
    serviceInstanceId: defaults.serviceInstanceId,
    url,
    protocol: env.OTEL_EXPORTER_OTLP_PROTOCOL,
    headers: env.OTEL_EXPORTER_OTLP_HEADERS,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG,
    scheduleDelayMs: env.OTEL_BSP_SCHEDULE_DELAY,
  };
}

/** Spans buffered for export at most; past it new spans are dropped (counted by the SDK), never blocking a job. */
const MAX_QUEUED_SPANS = 16_384;
/** Spans per export request. */
const EXPORT_BATCH = 1_024;
/** Longest a stopping process waits for its last spans to be exported. */
const SHUTDOWN_EXPORT_MS = 3_000;
/** Links a span keeps (a dispatch round links each chunk it published). */
const MAX_LINKS = 1_000;

/**
 * The process's tracing: NO_TRACING when `config` is null, else an OpenTelemetry tracer provider with a
 * batch span processor and an OTLP/HTTP exporter (protobuf or JSON). Export failures are logged (warn)
 * and never reach the job path.
 */
export async function createTracing(config: TracingConfig | null, logger?: Logger): Promise<Tracing> {
  if (!config) return NO_TRACING;
  const [api, sdk, resources, exporterModule] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/resources"),
    config.protocol === "http/json" ? import("@opentelemetry/exporter-trace-otlp-http") : import("@opentelemetry/exporter-trace-otlp-proto"),
  ]);
  if (logger) {
    const log = logger.child({ component: "otel" });
    api.diag.setLogger(
      {
        error: (message, ...args) => log.warn({ args: args.map(String) }, message),
        warn: (message, ...args) => log.warn({ args: args.map(String) }, message),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      api.DiagLogLevel.WARN,
    );
  }
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerRatio);
  const sampler = {
    always_on: new sdk.AlwaysOnSampler(),
    always_off: new sdk.AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: new sdk.ParentBasedSampler({ root: ratio }),
  }[config.sampler];
  const exporter = new exporterModule.OTLPTraceExporter({ url: config.url, headers: config.headers, timeoutMillis: 10_000 });
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({
      "service.name": config.serviceName,
      "service.namespace": "tick",
      ...(config.serviceInstanceId ? { "service.instance.id": config.serviceInstanceId } : {}),
    }),
    sampler,
    spanLimits: { linkCountLimit: MAX_LINKS },
    spanProcessors: [
      new sdk.BatchSpanProcessor({ exporter, scheduledDelayMillis: config.scheduleDelayMs, maxQueueSize: MAX_QUEUED_SPANS, maxExportBatchSize: EXPORT_BATCH }),
    ],
  });
  const tracer = provider.getTracer("tick");
  const kinds: Record<SpanKind, number> = {
    server: api.SpanKind.SERVER,
    client: api.SpanKind.CLIENT,
    producer: api.SpanKind.PRODUCER,
    consumer: api.SpanKind.CONSUMER,
    internal: api.SpanKind.INTERNAL,
  };
  const remote = (c: TraceContext) => ({
    traceId: c.traceId,
    spanId: c.spanId,
    traceFlags: c.flags,
    isRemote: true,
    ...(c.traceState ? { traceState: api.createTraceState(c.traceState) } : {}),
  });
  const clean = (attributes: SpanAttributes) => {
    const out: Record<string, string | number | boolean> = {};
    for (const key in attributes) {
      const value = attributes[key];
      if (value !== null && value !== undefined) out[key] = value;
    }
    return out;
  };

  return {
    enabled: true,
    startSpan(name, options = {}) {
      const parent = options.parent ? api.trace.setSpanContext(api.ROOT_CONTEXT, remote(options.parent)) : api.ROOT_CONTEXT;
      const span = tracer.startSpan(
        name,
        {
          kind: kinds[options.kind ?? "internal"],
          root: !options.parent,
          ...(options.attributes ? { attributes: clean(options.attributes) } : {}),
          ...(options.links?.length ? { links: options.links.map((l) => ({ context: remote(l) })) } : {}),
        },
        parent,
      );
      const ids = span.spanContext();
      // The tracestate travels on unchanged: Tick adds no entry of its own.
      const context: TraceContext = { traceId: ids.traceId, spanId: ids.spanId, flags: ids.traceFlags & 0x01, traceState: options.parent?.traceState };
      return {
        context,
        recording: span.isRecording(),
        setAttributes: (attributes) => void span.setAttributes(clean(attributes)),
        fail: (message) => void span.setStatus({ code: api.SpanStatusCode.ERROR, message }),
        end: () => span.end(),
      };
    },
    forceFlush: () => provider.forceFlush(),
    // Bounded: an unreachable receiver must not hold up a process's stop (the spans are lost, not the jobs).
    shutdown: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, SHUTDOWN_EXPORT_MS);
        timer.unref();
        provider.shutdown().then(
          () => (clearTimeout(timer), resolve()),
          () => (clearTimeout(timer), resolve()),
        );
      }),
  };
}
