import { describe, it, expect } from "vitest";
import { JOB_FAILURE_KINDS, classifyHttpOutcome, isRetryable, parseRetryAfterMs, type JobFailureKind } from "./job-failure.js";

const now = new Date("2025-03-30T12:00:00.000Z");

describe("classifyHttpOutcome", () => {
  it.each([
    ["200", { status: 200 }, { kind: "success" }],
    ["204", { status: 204 }, { kind: "success" }],
    ["299", { status: 299 }, { kind: "success" }],
    ["301 (redirect not followed)", { status: 301 }, { kind: "non_retryable" }],
    ["400", { status: 400 }, { kind: "non_retryable" }],
    ["401", { status: 401 }, { kind: "non_retryable" }],
    ["404", { status: 404 }, { kind: "non_retryable" }],
    ["409", { status: 409 }, { kind: "non_retryable" }],
    ["422", { status: 422 }, { kind: "non_retryable" }],
    ["408", { status: 408 }, { kind: "retryable" }],
    ["425", { status: 425 }, { kind: "retryable" }],
    ["429 without Retry-After", { status: 429 }, { kind: "retryable" }],
    ["500", { status: 500 }, { kind: "retryable" }],
    ["502", { status: 502 }, { kind: "retryable" }],
    ["503 without Retry-After", { status: 503 }, { kind: "retryable" }],
    ["599", { status: 599 }, { kind: "retryable" }],
    ["429 with seconds", { status: 429, retryAfterHeader: "120" }, { kind: "retry_after", retryAfterMs: 120_000 }],
    ["503 with seconds", { status: 503, retryAfterHeader: " 0 " }, { kind: "retry_after", retryAfterMs: 0 }],
    [
      "503 with HTTP-date",
      { status: 503, retryAfterHeader: "Sun, 30 Mar 2025 12:01:30 GMT" },
      { kind: "retry_after", retryAfterMs: 90_000 },
    ],
    [
      "429 with an HTTP-date in the past",
      { status: 429, retryAfterHeader: "Sun, 30 Mar 2025 11:00:00 GMT" },
      { kind: "retry_after", retryAfterMs: 0 },
    ],
    ["429 with garbage Retry-After", { status: 429, retryAfterHeader: "soon" }, { kind: "retryable" }],
    ["503 with negative Retry-After", { status: 503, retryAfterHeader: "-5" }, { kind: "retryable" }],
    ["500 ignores Retry-After", { status: 500, retryAfterHeader: "60" }, { kind: "retryable" }],
    ["400 ignores Retry-After", { status: 400, retryAfterHeader: "60" }, { kind: "non_retryable" }],
    ["timeout", { timedOut: true }, { kind: "timeout" }],
    ["timeout wins over a late status", { timedOut: true, status: 200 }, { kind: "timeout" }],
    ["network error", { networkError: true }, { kind: "retryable" }],
    ["no response at all", {}, { kind: "retryable" }],
  ] as const)("%s", (_name, input, expected) => {
    expect(classifyHttpOutcome({ ...input, now })).toEqual(expected);
  });
});

describe("parseRetryAfterMs", () => {
  it.each([
    [undefined, undefined],
    [null, undefined],
    ["", undefined],
    ["1.5", undefined],
    ["5", 5_000],
    ["Sun, 30 Mar 2025 12:00:10 GMT", 10_000],
  ] as const)("%s → %s", (header, expected) => {
    expect(parseRetryAfterMs(header, now)).toBe(expected);
  });
});

describe("isRetryable", () => {
  const expected: Record<JobFailureKind, boolean> = {
    retryable: true,
    non_retryable: false,
    retry_after: true,
    fenced_out: false,
    dependency_open: true,
    timeout: true,
    lease_expired: true,
  };

  it.each(JOB_FAILURE_KINDS.map((kind) => [kind, expected[kind]] as const))("%s → %s", (kind, retryable) => {
    expect(isRetryable(kind)).toBe(retryable);
  });

  it("throws on a kind outside the taxonomy (e.g. a bad database value)", () => {
    expect(() => isRetryable("mystery" as JobFailureKind)).toThrow(/mystery/);
  });
});
