import { describe, expect, it } from "vitest";
import { decideAttemptOutcome, type AttemptOutcomeInput } from "./attempt-outcome.js";

const now = new Date("2026-01-01T00:00:00.000Z");
const base: AttemptOutcomeInput = {
  ended: "retryable",
  attemptCount: 1,
  maxAttempts: 3,
  backoff: { strategy: "exponential", baseMs: 1_000, maxMs: 60_000, jitter: "none" },
  now,
  expiresAt: null,
  cancelRequested: false,
  random: () => 0.5,
};
const decide = (over: Partial<AttemptOutcomeInput>) => decideAttemptOutcome({ ...base, ...over });

describe("decideAttemptOutcome", () => {
  it("a success succeeds, whatever else holds", () => {
    expect(decide({ ended: "success", attemptCount: 3, cancelRequested: true, expiresAt: now })).toEqual({ kind: "succeeded" });
  });

  it("retries a retryable failure after its backoff, measured by attempt number", () => {
    expect(decide({ attemptCount: 1 })).toEqual({ kind: "retry", dueInMs: 1_000 });
    expect(decide({ attemptCount: 2 })).toEqual({ kind: "retry", dueInMs: 2_000 });
    expect(decide({ ended: "timeout", attemptCount: 2 })).toEqual({ kind: "retry", dueInMs: 2_000 });
    expect(decide({ ended: "lease_expired", attemptCount: 1 })).toEqual({ kind: "retry", dueInMs: 1_000 });
  });

  it("takes a lost attempt that never counted (attempt count 0) as the first", () => {
    expect(decide({ ended: "lease_expired", attemptCount: 0 })).toEqual({ kind: "retry", dueInMs: 1_000 });
  });

  it("waits at least the target's Retry-After, and no less than the backoff", () => {
    expect(decide({ ended: "retry_after", retryAfterMs: 30_000 })).toEqual({ kind: "retry", dueInMs: 30_000 });
    expect(decide({ ended: "retry_after", retryAfterMs: 10 })).toEqual({ kind: "retry", dueInMs: 1_000 });
  });

  it("applies the jitter of the job's policy", () => {
    expect(decide({ backoff: { ...base.backoff, jitter: "full" }, random: () => 0.25 })).toEqual({ kind: "retry", dueInMs: 250 });
  });

  it("is dead when the failure is not retryable or no attempt is left", () => {
    expect(decide({ ended: "non_retryable" })).toEqual({ kind: "dead" });
    expect(decide({ attemptCount: 3 })).toEqual({ kind: "dead" });
    expect(decide({ ended: "lease_expired", attemptCount: 3 })).toEqual({ kind: "dead" });
  });

  it("expires when the retry would start after the job's deadline, never before it", () => {
    expect(decide({ expiresAt: new Date(now.getTime() + 999) })).toEqual({ kind: "expired" });
    expect(decide({ expiresAt: new Date(now.getTime() + 1_000) })).toEqual({ kind: "retry", dueInMs: 1_000 });
  });

  it("a cancel recorded while the attempt ran ends the job cancelled unless the attempt succeeded", () => {
    expect(decide({ cancelRequested: true })).toEqual({ kind: "cancelled" });
    expect(decide({ cancelRequested: true, attemptCount: 3 })).toEqual({ kind: "cancelled" });
    expect(decide({ cancelRequested: true, ended: "non_retryable" })).toEqual({ kind: "cancelled" });
    expect(decide({ cancelRequested: true, expiresAt: now })).toEqual({ kind: "cancelled" });
  });
});
