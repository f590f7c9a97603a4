/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate` headers a
 * job's trace travels in, from the creating request to every attempt's call to the target and to the
 * completion webhook. Pure and cheap: parsing is a few character checks, new IDs come from a pooled
 * buffer of random bytes (Web Crypto, so this module also loads in the browser bundle).
 */

/** A span's identity as it is propagated: what a `traceparent` header carries, and the `tracestate` beside it. */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero: the span the receiver's spans are children of. */
  spanId: string;
  /** Trace flags; bit 0 is `sampled` (the only flag version 00 defines). */
  flags: number;
  /** The `tracestate` header, if valid; carried unchanged. */
  traceState?: string | undefined;
}

export const TRACE_FLAG_SAMPLED = 0x01;

// version-traceid-parentid-flags, then what a later version may add; optional whitespace around the value.
const TRACEPARENT = /^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(.*?)[ \t]*$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_SPAN_ID = "0".repeat(16);

/**
 * Parses a `traceparent` header strictly (W3C Trace Context, "traceparent Header Field Values"): lowercase
 * hex only, version `ff` invalid, trace ID and parent ID not all zero; a version 00 header is exactly 55
 * characters; a higher version may be longer, its first 55 characters parsed as version 00 and the rest
 * ignored after a `-`. Anything else is null: the caller starts a new trace, never fails the request.
 * Flags other than `sampled` are dropped (version 00 says to propagate them as zero).
 */
export function parseTraceparent(header: string | null | undefined): Omit<TraceContext, "traceState"> | null {
  if (typeof header !== "string" || header.length < 55) return null;
  const m = TRACEPARENT.exec(header);
  if (!m) return null;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string];
  if (version === "ff" || (version === "00" ? rest !== "" : rest !== "" && rest[0] !== "-")) return null;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return null;
  return { traceId, spanId, flags: parseInt(flags, 16) & TRACE_FLAG_SAMPLED };
}

// tracestate list members (W3C "tracestate Header Field Values"): key = simple-key / multi-tenant-key,
// value = 0-255 printable ASCII characters other than "," and "=", not ending in a space.
const TRACESTATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
/** Longest tracestate kept (the spec asks propagators to carry at least 512 characters). */
export const TRACESTATE_MAX_LENGTH = 512;

/**
 * Validates a `tracestate` header (several headers arrive joined by commas): at most 32 list members,
 * each `key=value` with a valid key and value, no key twice. Empty members (",,") are allowed and dropped.
 * Returns the normalised list, or undefined when absent or invalid (then only the tracestate is dropped,
 * not the trace). Longer than 512 characters: dropped too (rather than cutting members out).
 */
export function parseTracestate(header: string | null | undefined): string | undefined {
  if (typeof header !== "string") return undefined;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of header.split(",")) {
    const member = raw.trim();
    if (member === "") continue;
    const eq = member.indexOf("=");
    if (eq <= 0) return undefined;
    const key = member.slice(0, eq);
    const value = member.slice(eq + 1);
    if (!TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(value) || keys.has(key)) return undefined;
    keys.add(key);
    members.push(member);
  }
  if (members.length === 0 || members.length > 32) return undefined;
  const joined = members.join(",");
  return joined.length > TRACESTATE_MAX_LENGTH ? undefined : joined;
}

/** The trace context of an incoming request's headers, or null when its traceparent is absent or invalid. */
export function parseTraceHeaders(traceparent: string | null | undefined, tracestate: string | null | undefined): TraceContext | null {
  const parent = parseTraceparent(traceparent);
  if (!parent) return null;
  const traceState = parseTracestate(tracestate);
  return traceState === undefined ? parent : { ...parent, traceState };
}

/** The `traceparent` header of a context (version 00). */
export function formatTraceparent(context: Pick<TraceContext, "traceId" | "spanId" | "flags">): string {
  return `00-${context.traceId}-${context.spanId}-${HEX_BYTE[context.flags & 0xff]}`;
}

// --- New IDs -----------------------------------------------------------------------------------------

const HEX_BYTE = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let offset = 0;

/** `bytes` random bytes as lowercase hex, from a pool refilled 4 KiB at a time (one getRandomValues call). */
function randomHex(bytes: number): string {
  for (;;) {
    if (offset + bytes > pool.length) {
      pool = globalThis.crypto.getRandomValues(new Uint8Array(POOL_BYTES));
      offset = 0;
    }
    let hex = "";
    let zero = true;
    for (let i = 0; i < bytes; i++) {
      const b = pool[offset + i]!;
      if (b !== 0) zero = false;
      hex += HEX_BYTE[b];
    }
    offset += bytes;
    if (!zero) return hex; // all-zero IDs are invalid
  }
}

/** A new random trace ID (16 bytes, hex). */
export const newTraceId = (): string => randomHex(16);

/** A new random span ID (8 bytes, hex). */
export const newSpanId = (): string => randomHex(8);

/** A new span of `parent`'s trace (same trace ID, flags and tracestate, new span ID); a new sampled trace without one. */
export function childTraceContext(parent: TraceContext | null | undefined): TraceContext {
  if (!parent) return { traceId: newTraceId(), spanId: newSpanId(), flags: TRACE_FLAG_SAMPLED };
  return { traceId: parent.traceId, spanId: newSpanId(), flags: parent.flags, traceState: parent.traceState };
}

/** The trace context stored with a job (`jobs.traceparent`, `jobs.tracestate`), or null when it has none or it is malformed. */
export function storedTraceContext(traceparent: string | null | undefined, tracestate: string | null | undefined): TraceContext | null {
  const parent = parseTraceparent(traceparent);
  if (!parent) return null;
  return tracestate ? { ...parent, traceState: tracestate } : parent;
}
