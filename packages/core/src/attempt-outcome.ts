import type { BackoffPolicy } from "./backoff.js";
import { computeBackoffMs } from "./backoff.js";
import { decideAfterFailure } from "./job-state-machine.js";
import { isRetryable, type JobFailureKind } from "./job-failure.js";

/** What an ended attempt does to its job: the worker's completion and the reaper's settlement write this. */
export type AttemptOutcome =
  | { kind: "succeeded" }
  | { kind: "retry"; dueInMs: number }
  | { kind: "dead" }
  | { kind: "expired" }
  | { kind: "cancelled" };

export interface AttemptOutcomeInput {
  /** How the attempt ended: a success, or its failure's kind ("lease_expired" for an attempt the reaper found lost). */
  ended: "success" | JobFailureKind;
  /** Attempts made so far, including the one that ended. */
  attemptCount: number;
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** The target's Retry-After, when it sent one: the retry waits at least this long. */
  retryAfterMs?: number;
  /** The database clock now (never a process's own clock): the retry's due time is measured from it. */
  now: Date;
  expiresAt: Date | null;
  /**
   * A cancel was recorded while the attempt ran (the caller read it under the job's row lock). The
   * completion statement applies the same rule to a cancel recorded after the caller read the job.
   */
  cancelRequested: boolean;
  random: () => number;
}

/**
 * The one decision of what follows an attempt's end. A success succeeds. A failure is retried after its
 * backoff (at least the Retry-After) when its kind is retryable, attempts remain and the retry would start
 * before the job's deadline; otherwise the job is dead (no attempts left, or not retryable) or expired (the
 * retry would land past the deadline). A job whose cancel was recorded while the attempt ran ends cancelled
 * unless the attempt succeeded, as the cancel's 202 promised (docs/api.md, Cancelling).
 */
export function decideAttemptOutcome(input: AttemptOutcomeInput & { ended: JobFailureKind }): Exclude<AttemptOutcome, { kind: "succeeded" }>;
export function decideAttemptOutcome(input: AttemptOutcomeInput): AttemptOutcome;
export function decideAttemptOutcome(input: AttemptOutcomeInput): AttemptOutcome {
  if (input.ended === "success") return { kind: "succeeded" };
  if (input.cancelRequested) return { kind: "cancelled" };
  let delay = computeBackoffMs(input.backoff, Math.max(1, input.attemptCount), input.random);
  if (input.retryAfterMs !== undefined) delay = Math.max(delay, input.retryAfterMs);
  const verdict = decideAfterFailure({
    attemptCount: input.attemptCount,
    maxAttempts: input.maxAttempts,
    retryable: isRetryable(input.ended),
    nextDueAt: new Date(input.now.getTime() + delay),
    expiresAt: input.expiresAt,
  });
  if (verdict === "fail") return { kind: "dead" };
  if (verdict === "expire") return { kind: "expired" };
  return { kind: "retry", dueInMs: delay };
}
