import { describe, expect, it } from "vitest";
import { checkDebounce, checkRate, maxOpenByKey, slotRefillGaps } from "./flow-key-checks.js";
import { judge, renderTables, type BenchReport } from "./report.js";

describe("maxOpenByKey", () => {
  it("counts the most calls of each key open at once; a call ending as another starts does not overlap it", () => {
    const open = maxOpenByKey([
      { key: "a", start: 0, end: 200 },
      { key: "a", start: 100, end: 300 },
      { key: "a", start: 200, end: 400 }, // starts as the first ends: 2 open, not 3
      { key: "b", start: 0, end: 200 },
      { key: "b", start: 50, end: 250 },
      { key: "b", start: 199.5, end: 400 }, // before the first ended: 3
      { key: "c", start: 0, end: 10 },
    ]);
    expect(Object.fromEntries(open)).toEqual({ a: 2, b: 3, c: 1 });
  });

  it("does not depend on the order the calls were recorded in", () => {
    const calls = [
      { key: "a", start: 300, end: 500 },
      { key: "a", start: 0, end: 200 },
      { key: "a", start: 100, end: 350 },
    ];
    expect(maxOpenByKey(calls).get("a")).toBe(2);
    expect(maxOpenByKey([...calls].reverse()).get("a")).toBe(2);
  });
});

describe("slotRefillGaps", () => {
  it("measures from the end that freed a slot to the key's next call, per key, the first `cap` calls excluded", () => {
    const gaps = slotRefillGaps(
      [
        { key: "a", start: 0, end: 200 },
        { key: "a", start: 10, end: 210 },
        { key: "a", start: 260, end: 460 }, // the slot freed at 200
        { key: "a", start: 330, end: 530 }, // at 210
        { key: "b", start: 5, end: 205 },
        { key: "b", start: 305, end: 505 },
      ],
      2,
    );
    expect(gaps).toEqual([60, 120]);
    expect(slotRefillGaps([{ key: "b", start: 5, end: 205 }, { key: "b", start: 305, end: 505 }], 1)).toEqual([100]);
  });
});

describe("checkRate", () => {
  /** `perSecond[i]` calls in second i from the origin, spread over the second. */
  const starts = (origin: number, perSecond: number[]) => perSecond.flatMap((n, s) => Array.from({ length: n }, (_, i) => origin + s * 1_000 + (i * 1_000) / n));

  it("judges every whole second after the first against the rate ± 1, a key without calls in a second counting 0", () => {
    const byKey = new Map([
      ["steady", starts(10_000, [10, 5, 5, 4, 6, 5])],
      ["bursty", starts(10_000, [10, 5, 7, 5, 5, 5])],
      ["stalled", starts(10_000, [10, 5, 5])],
    ]);
    const r = checkRate(byKey, ["steady", "bursty", "stalled"], 10_000, 6, 5);
    // Seconds 1-5 of three keys; the first second's burst of 10 is not judged.
    expect(r.keySeconds).toBe(15);
    expect(r.histogram).toEqual({ "0": 3, "4": 1, "5": 9, "6": 1, "7": 1 });
    expect(r.keySecondsOff).toBe(4);
    expect(r.maxDeviation).toBe(5);
    expect(r.worst[0]).toEqual({ key: "stalled", second: 3, calls: 0 });
    expect(r.worst).toContainEqual({ key: "bursty", second: 2, calls: 7 });
  });

  it("ignores calls before the origin and after the last second", () => {
    const r = checkRate(new Map([["k", [999, ...starts(1_000, [5, 5, 5]), 4_000, 4_100]]]), ["k"], 1_000, 3, 5);
    expect(r).toMatchObject({ keySeconds: 2, keySecondsOff: 0, maxDeviation: 0, histogram: { "5": 2 } });
  });
});

describe("checkDebounce", () => {
  it("finds per window (the job the creates made or folded into) whether it ran once with its last create's payload", () => {
    const creates = [
      { key: "a", seq: 0, jobId: "j1" },
      { key: "a", seq: 4, jobId: "j1" },
      { key: "b", seq: 1, jobId: "j2" },
      { key: "b", seq: 5, jobId: "j2" },
      { key: "c", seq: 2, jobId: "j3" },
      { key: "c", seq: 6, jobId: "j4" }, // c's second window (its first closed before this create)
      { key: "d", seq: 3, jobId: "j5" },
    ];
    const runs = [
      { jobId: "j1", seq: 4 }, // once, last payload
      { jobId: "j2", seq: 1 }, // once, an earlier payload
      { jobId: "j3", seq: 2 },
      { jobId: "j4", seq: 6 },
      { jobId: "j4", seq: 6 }, // twice
      { jobId: "jx", seq: 9 }, // no create was answered with it
    ];
    expect(checkDebounce(creates, runs)).toEqual({
      keys: 4,
      windows: 5,
      maxWindowsPerKey: 2,
      windowsRunOnce: 3,
      windowsRunOnceWithLastPayload: 2,
      windowsNotRun: 1,
      windowsRunTwiceOrMore: 1,
      strayRuns: 1,
    });
  });
});

describe("flow-key targets", () => {
  const report = (scenarios: BenchReport["scenarios"]): BenchReport => ({ machine: {}, quick: true, startedAt: "", scenarios });
  const cap = (most: number) => ({
    keys: 100, jobs: 1_000, cap: 2, callMs: 200, maxConcurrentPerKey: most, keysOverCap: most > 2 ? 1 : 0, keysAtCap: 99,
    keyedJobsPerSecond: 450, plainJobsPerSecond: 500, throughputRatio: 0.9, keyedMeanOpen: 150, slotRefillP50Ms: 120, slotRefillP99Ms: 300,
  });
  const capTarget = (most: number) => judge(report({ keyCap: cap(most) })).find((t) => t.name.startsWith("key cap: most calls"))!;

  it("the cap is met at exactly 2 calls of one key at once: never 3, and not only 1", () => {
    expect(capTarget(2)).toMatchObject({ op: "==", limit: 2, value: 2, met: true });
    expect(capTarget(3)).toMatchObject({ value: 3, met: false });
    expect(capTarget(1)).toMatchObject({ value: 1, met: false });
  });

  it("the debounce target counts wrong windows, stray runs and refused creates; the rest are not run", () => {
    const debounce = {
      creates: 10_000, keys: 100, periodMs: 2_000, offeredSeconds: 10, createSeconds: 8, createsPerSecond: 1_250, createErrors: 1, opened: 100, folded: 9_899,
      windows: 100, maxWindowsPerKey: 1, runs: 101, windowsRunOnce: 99, windowsRunOnceWithLastPayload: 98, windowsNotRun: 0, windowsRunTwiceOrMore: 1, strayRuns: 0,
    };
    const targets = judge(report({ debounce, keyCap: cap(2) }));
    expect(targets.find((t) => t.name.startsWith("debounce: windows"))).toMatchObject({ value: 3, limit: 0, met: false });
    // 10,000 offered in 10 s is 1,000/s; 1,250/s keeps up.
    expect(targets.find((t) => t.name.startsWith("debounce: creates per second"))).toMatchObject({ value: 1_250, limit: 1_000, met: true });
    for (const prefix of ["key fairness", "key rate", "key claim"]) expect(targets.find((t) => t.name.startsWith(prefix))).toMatchObject({ met: null, value: null });
    const text = renderTables({ ...report({ debounce, keyCap: cap(2) }), targets });
    expect(text).toContain("Key cap: perKeyConcurrency 2");
    expect(text).toContain("Debounce through the API");
  });
});
