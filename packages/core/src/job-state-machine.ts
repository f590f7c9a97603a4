/**
 * The job lifecycle as data. Pure: no I/O and no clock reads, so the SQL layer, the API and the tests all
 * agree on one table. Mirrors the `job_status` enum in prisma/schema.prisma.
 */

export const JOB_STATES = ["scheduled", "dispatched", "running", "succeeded", "dead", "cancelled", "expired", "rate_limited"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** The state every job is created in, by the API, a schedule's occurrence or a batch. */
export const INITIAL_JOB_STATE = "scheduled" satisfies JobState;

export const TERMINAL_STATES: readonly JobState[] = ["succeeded", "dead", "cancelled", "expired", "rate_limited"];

export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.includes(state);
}

export function isJobState(value: unknown): value is JobState {
  return typeof value === "string" && (JOB_STATES as readonly string[]).includes(value);
}

export const JOB_EVENTS = ["dispatch", "start", "succeed", "retry", "fail", "cancel", "expire", "requeue", "replay", "abandon", "rate_limit"] as const;
export type JobEvent = (typeof JOB_EVENTS)[number];

/** Every pair not listed here is refused. */
export const TRANSITIONS: Readonly<Record<JobState, Readonly<Partial<Record<JobEvent, JobState>>>>> = {
  scheduled: {
    dispatch: "dispatched",
    cancel: "cancelled",
    expire: "expired",
    // Due beyond its flow key's rate in a queue that drops (perKeyRateMode "drop"): it never runs.
    rate_limit: "rate_limited",
  },
  dispatched: {
    start: "running",
    // Still cancellable: the message carries the job version, and the worker's pre-execution version
    // check discards it once this transition has bumped the version (S15).
    cancel: "cancelled",
    expire: "expired",
    // The attempt can never start (open circuit, lost message): a new attempt is issued without burning one.
    requeue: "scheduled",
  },
  running: {
    succeed: "succeeded",
    retry: "scheduled",
    fail: "dead",
    // An attempt that ends past the job's deadline expires instead of retrying.
    expire: "expired",
    // cancel is deliberately absent: the attempt may already have had its effect (see transition()).
    // abandon: the running attempt ended without success (or its lease expired) while a cancel was
    // recorded, so the job ends cancelled, as the cancel's 202 promised, instead of a retry, dead or expired.
    abandon: "cancelled",
  },
  succeeded: {},
  dead: { replay: "scheduled" },
  cancelled: {},
  expired: {},
  rate_limited: {},
};

export type JobRefusalReason = "terminal" | "running" | "not_allowed";

export type JobTransition =
  | { ok: true; from: JobState; to: JobState; event: JobEvent; versionDelta: 1 }
  | { ok: false; from: JobState; event: JobEvent; reason: JobRefusalReason };

/**
 * Decides one transition. Every allowed transition bumps `version` by exactly 1: each one is written as a
 * conditional update `WHERE id = $id AND version = $expected`, so a stale writer (old leader, late worker,
 * racing cancel) matches no row and loses the race instead of overwriting newer state.
 */
export function transition(state: JobState, event: JobEvent): JobTransition {
  const to = TRANSITIONS[state][event];
  if (to !== undefined) return { ok: true, from: state, to, event, versionDelta: 1 };
  if (isTerminal(state)) return { ok: false, from: state, event, reason: "terminal" };
  // A distinct reason so the API can answer truthfully: the current attempt may still complete (SPEC §5).
  if (state === "running" && event === "cancel") return { ok: false, from: state, event, reason: "running" };
  return { ok: false, from: state, event, reason: "not_allowed" };
}

/** The version to write (and to expect next) after `result`; unchanged when the transition was refused. */
export function nextVersion(version: number, result: JobTransition): number {
  return result.ok ? version + result.versionDelta : version;
}

export type FailureDecision = "retry" | "fail" | "expire";

export interface DecideAfterFailureOptions {
  /** Attempts made so far, including the one that just failed. */
  attemptCount: number;
  maxAttempts: number;
  retryable: boolean;
  /** When the retry would be due (now + backoff, or the endpoint's Retry-After). */
  nextDueAt: Date;
  /** The job's expiry deadline; null/undefined means none. */
  expiresAt?: Date | null;
}

/** What a failed (or lease-expired) attempt does to its job. Pure: the caller supplies every instant. */
export function decideAfterFailure(options: DecideAfterFailureOptions): FailureDecision {
  const { attemptCount, maxAttempts, retryable, nextDueAt, expiresAt } = options;
  // A final failure is `dead` even when a deadline is near: the cause is the failure, not the clock, and
  // dead jobs stay in the DLQ where they can be inspected and replayed.
  if (!retryable || attemptCount >= maxAttempts) return "fail";
  // The retry would start after the deadline, so it would never run: expire now rather than reschedule.
  if (expiresAt != null && expiresAt.getTime() < nextDueAt.getTime()) return "expire";
  return "retry";
}
