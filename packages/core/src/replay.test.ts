import { describe, expect, it } from "vitest";
import { REPLAY_ACTIONS, REPLAY_STATES, isReplayActionRepeat, judgeFailureRate, planReleases, replayStatesAllowing, replayTransition, type FirstOutcome, type ReplayAction, type ReplayState } from "./replay.js";

// Written by hand from the product rules ("-" means refused), not derived from the table under test.
const EXPECTED: Record<ReplayState, Record<ReplayAction, string>> = {
  running: { pause: "paused", resume: "-", cancel: "cancelled", autoPause: "auto_paused", complete: "completed" },
  // A paused replay whose work has all settled completes (nothing is left for a resume to do).
  paused: { pause: "-", resume: "running", cancel: "cancelled", autoPause: "-", complete: "completed" },
  auto_paused: { pause: "-", resume: "running", cancel: "cancelled", autoPause: "-", complete: "completed" },
  cancelled: { pause: "-", resume: "-", cancel: "-", autoPause: "-", complete: "-" },
  completed: { pause: "-", resume: "-", cancel: "-", autoPause: "-", complete: "-" },
};

describe("replay lifecycle", () => {
  for (const from of REPLAY_STATES) {
    for (const action of REPLAY_ACTIONS) {
      it(`${from} + ${action} → ${EXPECTED[from][action]}`, () => {
        expect(replayTransition(from, action) ?? "-").toBe(EXPECTED[from][action]);
      });
    }
  }

  it("lists the states an action may start from", () => {
    expect(replayStatesAllowing("resume")).toEqual(["paused", "auto_paused"]);
    expect(replayStatesAllowing("cancel")).toEqual(["running", "paused", "auto_paused"]);
  });
});

describe("planReleases", () => {
  it("fills one horizon with evenly spaced slots, never before now", () => {
    const p = planReleases({ nowMs: 1_000, nextSlotMs: null, ratePerSecond: 20, horizonMs: 1_000, remaining: 2_000, maxBatch: 500 });
    expect(p).toEqual({ count: 20, firstSlotMs: 1_000, spacingMs: 50, nextSlotMs: 2_000 });
  });

  it("continues from the next free slot and adds only what the horizon gained", () => {
    const p = planReleases({ nowMs: 1_300, nextSlotMs: 2_000, ratePerSecond: 20, horizonMs: 1_000, remaining: 2_000, maxBatch: 500 });
    expect(p.count).toBe(6);
    expect(p.firstSlotMs).toBe(2_000);
    expect(p.nextSlotMs).toBe(2_300);
  });

  it("does not bank slots across a pause: an old next slot starts again from now", () => {
    const p = planReleases({ nowMs: 60_000, nextSlotMs: 2_000, ratePerSecond: 20, horizonMs: 1_000, remaining: 2_000, maxBatch: 500 });
    expect(p.firstSlotMs).toBe(60_000);
    expect(p.count).toBe(20);
  });

  it("is bounded by what is left and by the batch", () => {
    expect(planReleases({ nowMs: 0, nextSlotMs: null, ratePerSecond: 1_000, horizonMs: 1_000, remaining: 7, maxBatch: 500 }).count).toBe(7);
    expect(planReleases({ nowMs: 0, nextSlotMs: null, ratePerSecond: 1_000, horizonMs: 1_000, remaining: 5_000, maxBatch: 500 }).count).toBe(500);
  });

  it("releases slow rates one slot at a time", () => {
    const p = planReleases({ nowMs: 0, nextSlotMs: null, ratePerSecond: 0.5, horizonMs: 1_000, remaining: 10, maxBatch: 500 });
    expect(p.count).toBe(0);
    const later = planReleases({ nowMs: 0, nextSlotMs: null, ratePerSecond: 0.5, horizonMs: 2_000, remaining: 10, maxBatch: 500 });
    expect(later).toMatchObject({ count: 1, nextSlotMs: 2_000 });
  });
});

describe("judgeFailureRate", () => {
  const ok: FirstOutcome = { outcome: "succeeded", error: null };
  const bad = (error: string): FirstOutcome => ({ outcome: "failed", error });

  it("waits for a full window before judging", () => {
    expect(judgeFailureRate(Array<FirstOutcome>(19).fill(bad("timeout")), { window: 20, threshold: 0.5, total: 2_000 })).toEqual({ pause: false, rate: null });
  });

  it("judges a replay smaller than the window once all its jobs have a first outcome", () => {
    expect(judgeFailureRate([bad("timeout"), bad("timeout"), ok], { window: 20, threshold: 0.5, total: 3 })).toMatchObject({ pause: true });
  });

  it("pauses above the threshold and says why, most common error first", () => {
    const verdict = judgeFailureRate([...Array<FirstOutcome>(12).fill(bad("http_status 503")), ...Array<FirstOutcome>(6).fill(bad("timeout")), ok, ok], { window: 20, threshold: 0.5, total: 100 });
    expect(verdict.pause).toBe(true);
    if (!verdict.pause) return;
    expect(verdict.rate).toBe(0.9);
    expect(verdict.reason).toContain("18 of the last 20 replayed jobs failed again (90%, threshold 50%)");
    expect(verdict.reason).toContain("http_status 503 (12), timeout (6)");
  });

  it("keeps going at or below the threshold, judging only the newest window", () => {
    const recent = [...Array<FirstOutcome>(10).fill(ok), ...Array<FirstOutcome>(10).fill(bad("timeout")), ...Array<FirstOutcome>(50).fill(bad("timeout"))];
    expect(judgeFailureRate(recent, { window: 20, threshold: 0.5, total: 100 })).toEqual({ pause: false, rate: 0.5 });
  });
});

describe("isReplayActionRepeat", () => {
  it.each([
    ["paused", "pause", true],
    ["running", "resume", true],
    ["cancelled", "cancel", true],
    ["auto_paused", "pause", false],
    ["running", "pause", false],
    ["paused", "resume", false],
    ["completed", "cancel", false],
    ["completed", "pause", false],
  ] as const)("%s + %s → repeat: %s", (state, action, repeat) => {
    expect(isReplayActionRepeat(state, action)).toBe(repeat);
  });
});
