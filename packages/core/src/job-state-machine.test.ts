import { describe, it, expect } from "vitest";
import {
  JOB_EVENTS,
  JOB_STATES,
  TRANSITIONS,
  decideAfterFailure,
  isJobState,
  isTerminal,
  nextVersion,
  transition,
  type JobEvent,
  type JobState,
} from "./job-state-machine.js";

// Written by hand from the product rules, NOT derived from TRANSITIONS, so a wrong table entry fails here.
// A state name means "allowed, goes to that state"; "!reason" means "refused with that reason".
const EXPECTED: Record<JobState, Record<JobEvent, string>> = {
  scheduled: {
    dispatch: "dispatched", start: "!not_allowed", succeed: "!not_allowed", retry: "!not_allowed",
    fail: "!not_allowed", cancel: "cancelled", expire: "expired", requeue: "!not_allowed", replay: "!not_allowed", abandon: "!not_allowed",
    rate_limit: "rate_limited",
  },
  dispatched: {
    dispatch: "!not_allowed", start: "running", succeed: "!not_allowed", retry: "!not_allowed",
    fail: "!not_allowed", cancel: "cancelled", expire: "expired", requeue: "scheduled", replay: "!not_allowed", abandon: "!not_allowed",
    rate_limit: "!not_allowed",
  },
  running: {
    dispatch: "!not_allowed", start: "!not_allowed", succeed: "succeeded", retry: "scheduled",
    fail: "dead", cancel: "!running", expire: "expired", requeue: "!not_allowed", replay: "!not_allowed", abandon: "cancelled",
    rate_limit: "!not_allowed",
  },
  succeeded: {
    dispatch: "!terminal", start: "!terminal", succeed: "!terminal", retry: "!terminal",
    fail: "!terminal", cancel: "!terminal", expire: "!terminal", requeue: "!terminal", replay: "!terminal", abandon: "!terminal",
    rate_limit: "!terminal",
  },
  dead: {
    dispatch: "!terminal", start: "!terminal", succeed: "!terminal", retry: "!terminal",
    fail: "!terminal", cancel: "!terminal", expire: "!terminal", requeue: "!terminal", replay: "scheduled", abandon: "!terminal",
    rate_limit: "!terminal",
  },
  cancelled: {
    dispatch: "!terminal", start: "!terminal", succeed: "!terminal", retry: "!terminal",
    fail: "!terminal", cancel: "!terminal", expire: "!terminal", requeue: "!terminal", replay: "!terminal", abandon: "!terminal",
    rate_limit: "!terminal",
  },
  expired: {
    dispatch: "!terminal", start: "!terminal", succeed: "!terminal", retry: "!terminal",
    fail: "!terminal", cancel: "!terminal", expire: "!terminal", requeue: "!terminal", replay: "!terminal", abandon: "!terminal",
    rate_limit: "!terminal",
  },
  rate_limited: {
    dispatch: "!terminal", start: "!terminal", succeed: "!terminal", retry: "!terminal",
    fail: "!terminal", cancel: "!terminal", expire: "!terminal", requeue: "!terminal", replay: "!terminal", abandon: "!terminal",
    rate_limit: "!terminal",
  },
};

const pairs = JOB_STATES.flatMap((state) => JOB_EVENTS.map((event) => [state, event, EXPECTED[state][event]] as const));

describe("job transition table", () => {
  it("covers every (state, event) pair", () => {
    expect(pairs).toHaveLength(88);
    expect(Object.keys(TRANSITIONS).sort()).toEqual([...JOB_STATES].sort());
  });

  it.each(pairs)("%s + %s → %s", (state, event, expected) => {
    const result = transition(state, event);
    if (expected.startsWith("!")) {
      expect(result).toEqual({ ok: false, from: state, event, reason: expected.slice(1) });
      expect(nextVersion(7, result)).toBe(7);
    } else {
      expect(result).toEqual({ ok: true, from: state, to: expected, event, versionDelta: 1 });
      expect(nextVersion(7, result)).toBe(8);
    }
  });
});

describe("isTerminal / isJobState", () => {
  it.each([
    ["scheduled", false], ["dispatched", false], ["running", false],
    ["succeeded", true], ["dead", true], ["cancelled", true], ["expired", true], ["rate_limited", true],
  ] as const)("%s terminal=%s", (state, terminal) => {
    expect(isTerminal(state)).toBe(terminal);
  });

  it("recognises only the enum's values", () => {
    expect(isJobState("running")).toBe(true);
    expect(isJobState("pending")).toBe(false);
    expect(isJobState(undefined)).toBe(false);
  });
});

describe("decideAfterFailure", () => {
  const at = (iso: string) => new Date(iso);
  const base = {
    attemptCount: 1,
    maxAttempts: 3,
    retryable: true,
    nextDueAt: at("2025-01-01T00:01:00Z"),
    expiresAt: null as Date | null,
  };

  it.each([
    ["retryable, attempts left, no deadline", {}, "retry"],
    ["deadline after the next due time", { expiresAt: at("2025-01-01T00:02:00Z") }, "retry"],
    ["deadline exactly at the next due time (not past)", { expiresAt: at("2025-01-01T00:01:00Z") }, "retry"],
    ["deadline before the next due time", { expiresAt: at("2025-01-01T00:00:59.999Z") }, "expire"],
    ["not retryable", { retryable: false }, "fail"],
    ["last attempt used", { attemptCount: 3 }, "fail"],
    ["more attempts than allowed (limit lowered after they ran)", { attemptCount: 5 }, "fail"],
    ["not retryable beats a passed deadline", { retryable: false, expiresAt: at("2024-12-31T00:00:00Z") }, "fail"],
    ["exhausted beats a passed deadline", { attemptCount: 3, expiresAt: at("2024-12-31T00:00:00Z") }, "fail"],
    ["one attempt left and deadline passed", { attemptCount: 2, expiresAt: at("2025-01-01T00:00:00Z") }, "expire"],
  ] as const)("%s → %s", (_name, overrides, expected) => {
    expect(decideAfterFailure({ ...base, ...overrides })).toBe(expected);
  });
});
