import { describe, it, expect } from "vitest";
import { backoffPolicySchema, computeBackoffMs, type BackoffPolicy } from "./backoff.js";

const exp = (jitter: "full" | "none"): BackoffPolicy => ({ strategy: "exponential", baseMs: 1000, maxMs: 60_000, jitter });
const fixed = (jitter: "full" | "none"): BackoffPolicy => ({ strategy: "fixed", baseMs: 5000, maxMs: 60_000, jitter });
const never = () => {
  throw new Error("random must not be called without jitter");
};

describe("computeBackoffMs without jitter", () => {
  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [6, 32_000],
    [7, 60_000], // 64s capped at 60s
    [100, 60_000],
    [10_000, 60_000], // no Infinity/NaN for huge attempt numbers
  ])("exponential attempt %i → %i ms", (attempt, expected) => {
    expect(computeBackoffMs(exp("none"), attempt, never)).toBe(expected);
  });

  it.each([1, 2, 10])("fixed attempt %i → baseMs", (attempt) => {
    expect(computeBackoffMs(fixed("none"), attempt, never)).toBe(5000);
  });

  it("fixed is still capped by maxMs", () => {
    expect(computeBackoffMs({ strategy: "fixed", baseMs: 5000, maxMs: 3000, jitter: "none" }, 1, never)).toBe(3000);
  });

  it("baseMs 0 means immediate retries", () => {
    expect(computeBackoffMs({ strategy: "exponential", baseMs: 0, maxMs: 1000, jitter: "none" }, 80, never)).toBe(0);
  });
});

describe("computeBackoffMs with full jitter", () => {
  it.each([
    [1, 0, 0],
    [1, 0.5, 500],
    [3, 0.25, 1000],
    [3, 0.999, 3996],
    [20, 0.5, 30_000], // jitter applies below the cap
    [20, 0.9999999, 59_999],
  ])("exponential attempt %i, random %d → %i ms", (attempt, r, expected) => {
    expect(computeBackoffMs(exp("full"), attempt, () => r)).toBe(expected);
  });

  it("fixed with jitter picks within [0, baseMs)", () => {
    expect(computeBackoffMs(fixed("full"), 4, () => 0.2)).toBe(1000);
  });

  it("a random source outside [0, 1) cannot escape [0, cap]", () => {
    expect(computeBackoffMs(exp("full"), 1, () => 1.7)).toBe(1000);
    expect(computeBackoffMs(exp("full"), 1, () => -3)).toBe(0);
  });
});

describe("computeBackoffMs input checks", () => {
  it.each([0, -1, 1.5, Number.NaN])("rejects attempt number %d", (attempt) => {
    expect(() => computeBackoffMs(exp("none"), attempt, never)).toThrow(RangeError);
  });
});

describe("backoffPolicySchema", () => {
  it("accepts the database default", () => {
    const value = { strategy: "exponential", baseMs: 1000, maxMs: 3_600_000, jitter: "full" };
    expect(backoffPolicySchema.parse(value)).toEqual(value);
  });

  it.each([
    ["unknown strategy", { strategy: "linear", baseMs: 1, maxMs: 2, jitter: "none" }, "strategy"],
    ["negative base", { strategy: "fixed", baseMs: -1, maxMs: 2, jitter: "none" }, "baseMs"],
    ["fractional max", { strategy: "fixed", baseMs: 1, maxMs: 2.5, jitter: "none" }, "maxMs"],
    ["max below base", { strategy: "fixed", baseMs: 10, maxMs: 2, jitter: "none" }, "maxMs"],
    ["unknown jitter", { strategy: "fixed", baseMs: 1, maxMs: 2, jitter: "equal" }, "jitter"],
    ["missing field", { strategy: "fixed", baseMs: 1, jitter: "none" }, "maxMs"],
  ])("rejects %s", (_name, value, path) => {
    const result = backoffPolicySchema.safeParse(value);
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join("."))).toContain(path);
  });
});
