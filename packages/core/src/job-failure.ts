/**
 * Job failure taxonomy: how an attempt ended when it did not succeed. Stored in `attempts.outcome`
 * (together with "success"), and the input to decideAttemptOutcome().
 */
export const JOB_FAILURE_KINDS = [
  "retryable",
  "non_retryable",
  "retry_after",
  "fenced_out",
  "dependency_open",
  "timeout",
  "lease_expired",
] as const;
export type JobFailureKind = (typeof JOB_FAILURE_KINDS)[number];

/** Whether the job should be tried again after a failure of this kind. */
export function isRetryable(kind: JobFailureKind): boolean {
  switch (kind) {
    case "retryable":
    case "retry_after":
    case "timeout":
      return true;
    // The worker stopped renewing its lease (crashed, frozen, cut off): the job gets its next attempt.
    case "lease_expired":
      return true;
    // The attempt never reached the endpoint (breaker open); the job is requeued, not given up on.
    case "dependency_open":
      return true;
    case "non_retryable":
      return false;
    // This worker no longer owns the attempt: the new owner decides the job's fate, so nothing is retried here.
    case "fenced_out":
      return false;
    default: {
      const unreachable: never = kind;
      throw new Error(`Unknown job failure kind: ${String(unreachable)}`);
    }
  }
}

export type HttpOutcome =
  | { kind: "success" }
  | { kind: "retryable" | "non_retryable" | "timeout" }
  | { kind: "retry_after"; retryAfterMs: number };

export interface HttpOutcomeInput {
  status?: number;
  timedOut?: boolean;
  networkError?: boolean;
  retryAfterHeader?: string | null;
  /** The instant the response arrived; an HTTP-date Retry-After is measured from it. */
  now: Date;
}

/** Parses Retry-After (delta-seconds or HTTP-date) into ms from `now`; undefined when absent or invalid. */
export function parseRetryAfterMs(header: string | null | undefined, now: Date): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // Require a letter so bare numbers with signs/decimals ("-1", "1.5") are not read as dates by Date.parse.
  if (!/[a-z]/i.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  // A date already in the past means "now", not a negative delay.
  return Math.max(0, at - now.getTime());
}

/** Classifies one HTTP attempt's result. The caller caps Retry-After against its own limits and deadline. */
export function classifyHttpOutcome(input: HttpOutcomeInput): HttpOutcome {
  if (input.timedOut) return { kind: "timeout" };
  // No status at all means the request never got a response: a transport failure, worth retrying.
  if (input.networkError || input.status === undefined) return { kind: "retryable" };
  const { status } = input;
  if (status >= 200 && status < 300) return { kind: "success" };
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfterMs(input.retryAfterHeader, input.now);
    if (retryAfterMs !== undefined) return { kind: "retry_after", retryAfterMs };
  }
  // 408 timeout, 425 too early, 429 throttled and 5xx are transient by definition.
  if (status === 408 || status === 425 || status === 429 || (status >= 500 && status < 600)) return { kind: "retryable" };
  // Other 4xx (and unfollowed 3xx) will fail the same way next time.
  return { kind: "non_retryable" };
}
