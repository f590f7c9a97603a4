import { describe, expect, it } from "vitest";
import { planOccurrences, type MisfirePolicy } from "./misfire.js";

const rule = { cron: "0 * * * *", timezone: "UTC", dstGap: "shift_forward" as const, dstOverlap: "first" as const };
const plan = (misfire: MisfirePolicy, since: string, now: string, maxCatchUp = 3) =>
  planOccurrences({ rule, misfire, maxCatchUp, misfireThresholdMs: 60_000, since: new Date(since), now: new Date(now), lookaheadMs: 0 });
const times = (p: ReturnType<typeof plan>) => p.runs.map((r) => [r.occurrence.at.toISOString().slice(11, 16), r.coalesced ?? null]);

describe("misfire policies after 5 missed hourly occurrences", () => {
  const since = "2026-01-01T00:00:00Z";
  const now = "2026-01-01T05:30:00Z"; // 01:00 … 05:00 were missed

  it("skip: none of them runs; the next fire is the next future occurrence", () => {
    const p = plan("skip", since, now);
    expect(times(p)).toEqual([]);
    expect([p.missed, p.dropped]).toEqual([5, 5]);
    expect(p.nextFireAt?.toISOString()).toBe("2026-01-01T06:00:00.000Z");
  });

  it("run_latest: one run, for 05:00, saying it coalesced 5", () => {
    const p = plan("run_latest", since, now);
    expect(times(p)).toEqual([["05:00", 5]]);
    expect(p.dropped).toBe(4);
  });

  it("catch_up: each missed one up to max_catch_up (the most recent)", () => {
    const p = plan("catch_up", since, now, 3);
    expect(times(p)).toEqual([["03:00", null], ["04:00", null], ["05:00", null]]);
    expect(p.dropped).toBe(2);
  });

  it("an occurrence within the threshold is on time under every policy", () => {
    for (const policy of ["skip", "run_latest", "catch_up"] as const) {
      const p = plan(policy, "2026-01-01T04:30:00Z", "2026-01-01T05:00:30Z");
      expect(times(p)).toEqual([["05:00", null]]);
      expect(p.missed).toBe(0);
    }
  });

  it("materialises ahead within the lookahead", () => {
    const p = planOccurrences({ rule, misfire: "skip", maxCatchUp: 3, misfireThresholdMs: 60_000, since: new Date("2026-01-01T05:00:00Z"), now: new Date("2026-01-01T05:59:58Z"), lookaheadMs: 5_000 });
    expect(times(p)).toEqual([["06:00", null]]);
    expect(p.nextFireAt?.toISOString()).toBe("2026-01-01T07:00:00.000Z");
  });
});
