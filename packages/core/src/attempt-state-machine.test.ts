import { describe, it, expect } from "vitest";
import {
  ATTEMPT_EVENTS,
  ATTEMPT_STATES,
  ATTEMPT_TRANSITIONS,
  isAttemptTerminal,
  transitionAttempt,
  type AttemptEvent,
  type AttemptState,
} from "./attempt-state-machine.js";

// Hand-written expectations, independent of ATTEMPT_TRANSITIONS. "!reason" = refused.
const EXPECTED: Record<AttemptState, Record<AttemptEvent, string>> = {
  pending: { start: "running", succeed: "!not_allowed", fail: "!not_allowed", lose_lease: "!not_allowed", discard: "discarded" },
  running: { start: "!not_allowed", succeed: "succeeded", fail: "failed", lose_lease: "lease_expired", discard: "!not_allowed" },
  succeeded: { start: "!terminal", succeed: "!terminal", fail: "!terminal", lose_lease: "!terminal", discard: "!terminal" },
  failed: { start: "!terminal", succeed: "!terminal", fail: "!terminal", lose_lease: "!terminal", discard: "!terminal" },
  lease_expired: { start: "!terminal", succeed: "!terminal", fail: "!terminal", lose_lease: "!terminal", discard: "!terminal" },
  discarded: { start: "!terminal", succeed: "!terminal", fail: "!terminal", lose_lease: "!terminal", discard: "!terminal" },
};

const pairs = ATTEMPT_STATES.flatMap((state) =>
  ATTEMPT_EVENTS.map((event) => [state, event, EXPECTED[state][event]] as const),
);

describe("attempt transition table", () => {
  it("covers every (state, event) pair", () => {
    expect(pairs).toHaveLength(30);
    expect(Object.keys(ATTEMPT_TRANSITIONS).sort()).toEqual([...ATTEMPT_STATES].sort());
  });

  it.each(pairs)("%s + %s → %s", (state, event, expected) => {
    const result = transitionAttempt(state, event);
    if (expected.startsWith("!")) {
      expect(result).toEqual({ ok: false, from: state, event, reason: expected.slice(1) });
    } else {
      expect(result).toEqual({ ok: true, from: state, to: expected, event });
    }
  });

  it.each([
    ["pending", false], ["running", false],
    ["succeeded", true], ["failed", true], ["lease_expired", true], ["discarded", true],
  ] as const)("%s terminal=%s", (state, terminal) => {
    expect(isAttemptTerminal(state)).toBe(terminal);
  });
});
