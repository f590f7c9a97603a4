/**
 * The attempt lifecycle as data (mirrors `attempt_status` in prisma/schema.prisma). Pure, like the job
 * state machine. Attempt rows carry no version: their writes are conditional on the expected status and
 * the attempt's fencing token instead, so a refused pair here is a lost race or a bug, never a retry.
 */

export const ATTEMPT_STATES = ["pending", "running", "succeeded", "failed", "lease_expired", "discarded"] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

export const ATTEMPT_TERMINAL_STATES: readonly AttemptState[] = ["succeeded", "failed", "lease_expired", "discarded"];

export function isAttemptTerminal(state: AttemptState): boolean {
  return ATTEMPT_TERMINAL_STATES.includes(state);
}

export const ATTEMPT_EVENTS = ["start", "succeed", "fail", "lose_lease", "discard"] as const;
export type AttemptEvent = (typeof ATTEMPT_EVENTS)[number];

/** Every pair not listed here is refused. */
export const ATTEMPT_TRANSITIONS: Readonly<Record<AttemptState, Readonly<Partial<Record<AttemptEvent, AttemptState>>>>> = {
  pending: {
    start: "running",
    // Only a never-started attempt can be discarded (job cancelled/expired/requeued before a worker began).
    discard: "discarded",
  },
  running: {
    succeed: "succeeded",
    fail: "failed",
    // Set by the reaper; the worker's late completion is then fenced out and recorded, not applied (S7).
    lose_lease: "lease_expired",
  },
  succeeded: {},
  failed: {},
  lease_expired: {},
  discarded: {},
};

export type AttemptRefusalReason = "terminal" | "not_allowed";

export type AttemptTransition =
  | { ok: true; from: AttemptState; to: AttemptState; event: AttemptEvent }
  | { ok: false; from: AttemptState; event: AttemptEvent; reason: AttemptRefusalReason };

export function transitionAttempt(state: AttemptState, event: AttemptEvent): AttemptTransition {
  const to = ATTEMPT_TRANSITIONS[state][event];
  if (to !== undefined) return { ok: true, from: state, to, event };
  return { ok: false, from: state, event, reason: isAttemptTerminal(state) ? "terminal" : "not_allowed" };
}
