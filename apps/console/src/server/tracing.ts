import os from "node:os";
import { parseTraceHeaders, toProblem, type TraceContext } from "@tick/core";
import { createTracing, tracingConfig, type TickSpan, type Tracing } from "@tick/runtime";
import { getContext } from "./context";
import { getEnv } from "./env";
import type { RequestHead } from "./api/request-head";

// Kept on globalThis, as the context is, so `next dev` hot reloads do not make a provider per edit.
const holder = globalThis as unknown as { __tickTracing?: Promise<Tracing> };

/**
 * The console's tracing (docs/observability.md, "Traces"): off (NO_TRACING, no SDK loaded) unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set. Made on first use: the SDK is imported only then.
 */
function getTracing(): Promise<Tracing> {
  holder.__tickTracing ??= createTracing(
    tracingConfig(getEnv(), { serviceName: "tick-console", serviceInstanceId: `${os.hostname()}:${process.pid}` }),
    getContext().logger,
  );
  return holder.__tickTracing;
}

/** Exports the spans still buffered (the console's shutdown); nothing when tracing was never used or is off. */
export async function stopTracing(): Promise<void> {
  await (await holder.__tickTracing)?.shutdown();
}

export interface CreateTrace {
  /** The trace context to store with the created jobs: null gives each job a new trace of its own. */
  stored: TraceContext | null;
  /** The "create job" span when tracing is on: the caller sets its outcome and ends it. */
  span: TickSpan | null;
}

/**
 * The trace of a job-creating request. Its `traceparent` (and `tracestate`) header is read strictly per W3C
 * Trace Context; a malformed one is ignored (the job starts a new trace), never an error. Tracing off: the
 * jobs keep the caller's own context, so their attempts are children of the caller's span. Tracing on:
 * a "create job" server span, a child of the caller's or a new root, whose context the jobs keep.
 */
export async function traceCreate(request: RequestHead, name: string, attributes: Record<string, string | number>): Promise<CreateTrace> {
  const incoming = parseTraceHeaders(request.headers.get("traceparent"), request.headers.get("tracestate"));
  const tracing = await getTracing();
  if (!tracing.enabled) return { stored: incoming, span: null };
  const span = tracing.startSpan(name, { kind: "server", parent: incoming, attributes: { "http.request.method": request.method, ...attributes } });
  return { stored: span.context, span };
}

/**
 * Ends a create span with the response's status, or with the error the request failed with (its problem's
 * status). As for any HTTP server span, only a 5xx marks it failed: a 4xx is the client's.
 */
export function endCreateSpan(span: TickSpan | null, outcome: unknown): void {
  if (!span) return;
  const status = typeof outcome === "number" ? outcome : toProblem(outcome).status;
  span.setAttributes({ "http.response.status_code": status });
  if (status >= 500) span.fail(typeof outcome === "number" ? `HTTP ${status}` : toProblem(outcome).title);
  span.end();
}
