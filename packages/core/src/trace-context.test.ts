import { describe, expect, it } from "vitest";
import {
  childTraceContext,
  formatTraceparent,
  newSpanId,
  newTraceId,
  parseTraceHeaders,
  parseTraceparent,
  parseTracestate,
  storedTraceContext,
} from "./trace-context.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

describe("parseTraceparent", () => {
  it("reads a valid version 00 header (the spec's example)", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 0 });
  });

  it("keeps only the sampled flag (version 00 propagates the others as zero)", () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.flags).toBe(1);
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-fe`)?.flags).toBe(0);
  });

  it("tolerates surrounding whitespace (optional whitespace around a header value)", () => {
    expect(parseTraceparent(` 00-${TRACE}-${SPAN}-01 `)?.traceId).toBe(TRACE);
  });

  it("parses a higher version's first 55 characters and ignores what follows a dash", () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-adds`)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01x`)).toBeNull();
  });

  it.each([
    ["absent", undefined],
    ["null", null],
    ["empty", ""],
    ["version ff", `ff-${TRACE}-${SPAN}-01`],
    ["version 00 with extra characters", `00-${TRACE}-${SPAN}-01-extra`],
    ["version 00 one character short", `00-${TRACE}-${SPAN}-1`],
    ["uppercase hex in the trace ID", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ["uppercase hex in the version", `0A-${TRACE}-${SPAN}-01`],
    ["all-zero trace ID", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["all-zero parent ID", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["a non-hex character", `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ["wrong separators", `00_${TRACE}_${SPAN}_01`],
    ["short trace ID", `00-${TRACE.slice(1)}-${SPAN}-01`],
    ["non-hex flags", `00-${TRACE}-${SPAN}-0x`],
    ["two headers joined by a comma", `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
    ["garbage", "not a traceparent at all, but long enough to pass the length check ok"],
  ])("refuses %s", (_, header) => {
    expect(parseTraceparent(header)).toBeNull();
  });
});

describe("parseTracestate", () => {
  it("keeps valid list members, normalised (spaces after commas and empty members dropped)", () => {
    expect(parseTracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE")).toBe("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    expect(parseTracestate("a=1,,b=2")).toBe("a=1,b=2");
    expect(parseTracestate("tenant@system=value")).toBe("tenant@system=value");
  });

  it.each([
    ["absent", undefined],
    ["empty", ""],
    ["a member without =", "rojo"],
    ["an uppercase key", "Rojo=1"],
    ["a key twice", "a=1,a=2"],
    ["a value with =", "a=b=c"],
    ["a value with a control character", "a=b\tc"],
    ["33 members", Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(",")],
    ["more than 512 characters", Array.from({ length: 3 }, (_, i) => `k${i}=${"v".repeat(200)}`).join(",")],
  ])("drops %s", (_, header) => {
    expect(parseTracestate(header)).toBeUndefined();
  });
});

describe("parseTraceHeaders", () => {
  it("a bad tracestate drops the tracestate only; a bad traceparent drops both", () => {
    expect(parseTraceHeaders(`00-${TRACE}-${SPAN}-01`, "rojo=1")).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1, traceState: "rojo=1" });
    expect(parseTraceHeaders(`00-${TRACE}-${SPAN}-01`, "Bad Key=1")).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(parseTraceHeaders("00-bad", "rojo=1")).toBeNull();
  });
});

describe("new IDs and child contexts", () => {
  it("makes valid, distinct IDs", () => {
    const traces = new Set(Array.from({ length: 2_000 }, () => newTraceId()));
    const spans = new Set(Array.from({ length: 2_000 }, () => newSpanId()));
    expect(traces.size).toBe(2_000);
    expect(spans.size).toBe(2_000);
    for (const t of traces) expect(t).toMatch(/^[0-9a-f]{32}$/);
    for (const s of spans) expect(s).toMatch(/^[0-9a-f]{16}$/);
  });

  it("a child keeps the trace, flags and tracestate, with a new span ID; no parent starts a sampled trace", () => {
    const parent = { traceId: TRACE, spanId: SPAN, flags: 0, traceState: "rojo=1" };
    const child = childTraceContext(parent);
    expect(child).toMatchObject({ traceId: TRACE, flags: 0, traceState: "rojo=1" });
    expect(child.spanId).not.toBe(SPAN);
    const fresh = childTraceContext(null);
    expect(fresh.flags).toBe(1);
    expect(parseTraceparent(formatTraceparent(fresh))).toEqual({ traceId: fresh.traceId, spanId: fresh.spanId, flags: 1 });
  });

  it("formats and reads back a stored context", () => {
    const header = formatTraceparent({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(header).toBe(`00-${TRACE}-${SPAN}-01`);
    expect(storedTraceContext(header, "rojo=1")).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1, traceState: "rojo=1" });
    expect(storedTraceContext(header, null)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
    expect(storedTraceContext(null, null)).toBeNull();
  });
});
