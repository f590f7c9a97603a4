import { IANAZone } from "luxon";
import { describe, expect, it, vi } from "vitest";
import { RecurrenceError, nextOccurrences, occurrenceKey, occurrencesBetween, validateRule } from "./index.js";

const rule = (cron: string, timezone = "Europe/Paris") => ({ cron, timezone, dstGap: "shift_forward" as const, dstOverlap: "first" as const });

describe("validateRule", () => {
  it.each([
    ["+02:00", /fixed offset/],
    ["UTC+2", /fixed offset/],
    ["Etc/GMT-2", /fixed offset/],
    ["Mars/Olympus_Mons", /not a known IANA zone/],
  ])("refuses the zone %s", (timezone, message) => {
    expect(validateRule({ cron: "0 9 * * *", timezone })).toEqual([expect.stringMatching(message)]);
  });

  it.each([["0 9 * *"], ["61 * * * *"], ["0 9 * * * * *"]])("refuses the cron %s", (cron) => {
    expect(validateRule({ cron, timezone: "Europe/Paris" })[0]).toMatch(/^cron: /);
  });

  it("accepts IANA zones, UTC, and 5 or 6 fields", () => {
    expect(validateRule({ cron: "0 9 * * 1-5", timezone: "America/New_York" })).toEqual([]);
    expect(validateRule({ cron: "*/10 * * * * *", timezone: "UTC" })).toEqual([]);
    expect(() => nextOccurrences(rule("0 9 * * *", "+02:00"), new Date(), 1)).toThrow(RecurrenceError);
  });
});

describe("nextOccurrences", () => {
  it("follows the zone's offset across a transition instead of reusing one offset", () => {
    const got = nextOccurrences(rule("0 9 * * *"), new Date("2026-03-27T12:00:00Z"), 3);
    expect(got.map((o) => [o.at.toISOString(), o.nominal, o.offsetMinutes])).toEqual([
      ["2026-03-28T08:00:00.000Z", "2026-03-28T09:00:00", 60],
      ["2026-03-29T07:00:00.000Z", "2026-03-29T09:00:00", 120],
      ["2026-03-30T07:00:00.000Z", "2026-03-30T09:00:00", 120],
    ]);
  });

  it("marks where the DST policy changed the result (the preview shows it)", () => {
    const gap = nextOccurrences(rule("30 2 * * *"), new Date("2026-03-28T12:00:00Z"), 1)[0]!;
    expect(gap).toMatchObject({ nominal: "2026-03-29T02:30:00", dst: "gap_shifted", offsetMinutes: 120 });
    expect(gap.at.toISOString()).toBe("2026-03-29T01:00:00.000Z"); // 03:00 local, the first valid instant
    const both = nextOccurrences({ ...rule("30 2 * * *"), dstOverlap: "both" }, new Date("2026-10-24T12:00:00Z"), 2);
    expect(both.map((o) => [o.at.toISOString(), o.dst])).toEqual([
      ["2026-10-25T00:30:00.000Z", "overlap_first"],
      ["2026-10-25T01:30:00.000Z", "overlap_last"],
    ]);
  });

  it("supports a seconds field and is strictly after the given instant", () => {
    const got = nextOccurrences(rule("*/20 * * * * *", "UTC"), new Date("2026-01-01T00:00:00Z"), 3);
    expect(got.map((o) => o.at.toISOString())).toEqual(["2026-01-01T00:00:20.000Z", "2026-01-01T00:00:40.000Z", "2026-01-01T00:01:00.000Z"]);
  });

  it("finds the next occurrences of a per-second schedule without walking hours of candidates", () => {
    const from = new Date("2026-06-01T12:00:00.500Z");
    const got = nextOccurrences(rule("* * * * * *"), from, 1000);
    expect(got).toHaveLength(1000);
    expect(got[0]!.at.toISOString()).toBe("2026-06-01T12:00:01.000Z");
    expect(got[999]!.at.getTime() - got[0]!.at.getTime()).toBe(999_000);
  });

  it("lists the occurrences in a range (what misfire handling counts)", () => {
    const missed = occurrencesBetween(rule("0 * * * *", "UTC"), new Date("2026-01-01T00:00:00Z"), new Date("2026-01-01T05:30:00Z"), 100);
    expect(missed).toHaveLength(5);
    expect(occurrencesBetween(rule("0 * * * *", "UTC"), new Date("2026-01-01T00:00:00Z"), new Date("2026-01-02T00:00:00Z"), 7)).toHaveLength(7);
  });
});

describe("occurrenceKey", () => {
  it("is derived from the schedule and the nominal local time with its offset", () => {
    const [first, second] = nextOccurrences({ ...rule("30 2 * * *"), dstOverlap: "both" }, new Date("2026-10-24T12:00:00Z"), 2);
    expect(occurrenceKey("s1", first!)).toBe("schedule:s1:2026-10-25T02:30:00+02:00");
    expect(occurrenceKey("s1", second!)).toBe("schedule:s1:2026-10-25T02:30:00+01:00");
  });
});

describe("work per call (a scheduler's event loop runs this every few hundred milliseconds)", () => {
  // Each zone offset lookup formats a date through Intl; counted, not timed, so the bound is exact work.
  const countOffsetLookups = (fn: () => void) => {
    const spy = vi.spyOn(IANAZone.prototype, "offset");
    try {
      fn();
      return spy.mock.calls.length;
    } finally {
      spy.mockRestore();
    }
  };
  const everySecond = (dstOverlap: "first" | "last" | "both") => ({ cron: "* * * * * *", timezone: "Europe/Berlin", dstGap: "shift_forward" as const, dstOverlap });

  it("a per-second schedule minutes before spring-forward: few lookups, and the gap is crossed once", () => {
    let got: ReturnType<typeof nextOccurrences> = [];
    const lookups = countOffsetLookups(() => {
      got = nextOccurrences(everySecond("first"), new Date("2027-03-28T00:59:58Z"), 4);
    });
    expect(got.map((o) => [o.at.toISOString(), o.nominal, o.dst ?? null])).toEqual([
      ["2027-03-28T00:59:59.000Z", "2027-03-28T01:59:59", null],
      ["2027-03-28T01:00:00.000Z", "2027-03-28T02:00:00", "gap_shifted"],
      ["2027-03-28T01:00:01.000Z", "2027-03-28T03:00:01", null],
      ["2027-03-28T01:00:02.000Z", "2027-03-28T03:00:02", null],
    ]);
    expect(lookups).toBeLessThan(200);
  });

  it.each(["first", "last", "both"] as const)("a per-second schedule 30 minutes before fall-back (overlap policy %s): few lookups", (policy) => {
    let got: ReturnType<typeof nextOccurrences> = [];
    const lookups = countOffsetLookups(() => {
      got = nextOccurrences(everySecond(policy), new Date("2027-10-31T00:30:00Z"), 100);
    });
    expect(got).toHaveLength(100);
    expect(got.every((o) => o.at.getTime() > Date.parse("2027-10-31T00:30:00Z"))).toBe(true);
    // In order, no instant twice.
    expect(new Set(got.map((o) => o.at.getTime())).size).toBe(100);
    expect(got.map((o) => o.at.getTime())).toEqual([...got.map((o) => o.at.getTime())].sort((a, b) => a - b));
    expect(lookups).toBeLessThan(200);
  });

  it("hundreds of calls across a transition stay cheap (what the materialiser does while the clock passes it)", () => {
    const lookups = countOffsetLookups(() => {
      for (let t = Date.parse("2027-03-28T00:55:00Z"); t < Date.parse("2027-03-28T01:05:00Z"); t += 2_000) {
        expect(nextOccurrences(everySecond("first"), new Date(t), 3)).toHaveLength(3);
      }
    });
    expect(lookups / 300).toBeLessThan(60);
  });
});
