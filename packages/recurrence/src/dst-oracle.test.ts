import { describe, expect, it } from "vitest";
import { lastOccurrencesBetween, nextOccurrences, occurrencesBetween, occurrencesThrough, type DstGapPolicy, type DstOverlapPolicy } from "./index.js";

// The oracle: brute force over UTC minutes with the platform's Intl data, sharing no code with the
// implementation (which resolves wall times through luxon's zone offsets and cron-parser).
const MINUTE = 60_000;
const formatters = new Map<string, Intl.DateTimeFormat>();
function wallOf(zone: string, ms: number): number {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
    });
    formatters.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute));
}
const offsetOf = (zone: string, ms: number) => (wallOf(zone, ms) - ms) / MINUTE;

/** Offset changes between 2020 and 2035, found by scanning hours and narrowing to the minute. */
function transitions(zone: string): number[] {
  const out: number[] = [];
  const start = Date.UTC(2020, 0, 1);
  const end = Date.UTC(2036, 0, 1);
  let prev = offsetOf(zone, start);
  const step = 86_400_000; // no zone changes offset twice within a day
  for (let t = start + step; t < end; t += step) {
    const o = offsetOf(zone, t);
    if (o === prev) continue;
    let lo = t - step;
    let hi = t;
    while (hi - lo > MINUTE) {
      const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE;
      if (offsetOf(zone, mid) === prev) lo = mid;
      else hi = mid;
    }
    out.push(hi);
    prev = o;
  }
  return out;
}

type Pattern = { minute: number | "*" | { every: number }; hour: number | "*" };
const matches = (p: Pattern, wall: number) => {
  const d = new Date(wall);
  const m = d.getUTCMinutes();
  const h = d.getUTCHours();
  const minuteOk = p.minute === "*" ? true : typeof p.minute === "number" ? m === p.minute : m % p.minute.every === 0;
  return minuteOk && (p.hour === "*" || h === p.hour);
};
const cronOf = (p: Pattern) =>
  `${p.minute === "*" ? "*" : typeof p.minute === "number" ? p.minute : `*/${p.minute.every}`} ${p.hour} * * *`;

/** Every UTC minute of a window with its wall time: computed once per transition. */
function enumerate(zone: string, from: number, to: number) {
  const minutes: { t: number; w: number }[] = [];
  for (let t = from - 3 * 3_600_000; t < to + 3 * 3_600_000; t += MINUTE) minutes.push({ t, w: wallOf(zone, t) });
  const byWall = new Map<number, number[]>();
  for (const m of minutes) byWall.set(m.w, [...(byWall.get(m.w) ?? []), m.t]);
  return { minutes, byWall, firstWall: Math.min(...byWall.keys()), lastWall: Math.max(...byWall.keys()) };
}

/** Expected fire instants in [from, to) for the pattern under the policies, by enumeration. */
function oracle(window: ReturnType<typeof enumerate>, p: Pattern, gap: DstGapPolicy, overlap: DstOverlapPolicy, from: number, to: number): number[] {
  const fires = new Set<number>();
  for (let w = window.firstWall; w <= window.lastWall; w += MINUTE) {
    if (!matches(p, w)) continue;
    const instants = window.byWall.get(w);
    if (!instants) {
      if (gap === "skip") continue;
      // The first instant whose wall time is later than the missing one.
      fires.add(window.minutes.find((m) => m.w > w)!.t);
    } else if (instants.length === 1) fires.add(instants[0]!);
    else {
      if (overlap !== "last") fires.add(instants[0]!);
      if (overlap !== "first") fires.add(instants[instants.length - 1]!);
    }
  }
  return [...fires].filter((t) => t >= from && t < to).sort((a, b) => a - b);
}

const ZONES = [
  "America/New_York",
  "Europe/London",
  "Europe/Paris",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "America/Santiago",
  "America/St_Johns",
  "Asia/Tehran",
  "Africa/Casablanca",
  "Pacific/Apia",
];
const GAPS: DstGapPolicy[] = ["shift_forward", "skip"];
const OVERLAPS: DstOverlapPolicy[] = ["first", "last", "both"];

describe.each(ZONES)("every DST transition 2020-2035 in %s", (zone) => {
  const list = transitions(zone);

  it("has transitions to test (or none, for zones that dropped DST)", () => {
    if (zone === "Pacific/Apia") expect(list.length).toBeLessThan(6); // DST abolished in 2021
    else if (zone === "Asia/Tehran") expect(list.length).toBeLessThan(10); // abolished in 2022
    else expect(list.length).toBeGreaterThanOrEqual(20);
  });

  it("daily, hourly and every-15-minute schedules in and around each gap and overlap match the oracle under every policy", { timeout: 120_000 }, () => {
    let checked = 0;
    for (const t of list) {
      const before = offsetOf(zone, t - MINUTE);
      const after = offsetOf(zone, t);
      // The wall times the transition touches: the skipped or repeated span.
      const wallStart = t + Math.min(before, after) * MINUTE;
      const spanMin = Math.abs(after - before);
      const inside = new Date(wallStart + Math.floor(spanMin / 2) * MINUTE);
      const patterns: Pattern[] = [
        { minute: inside.getUTCMinutes(), hour: inside.getUTCHours() }, // daily, inside the span
        { minute: new Date(wallStart).getUTCMinutes(), hour: new Date(wallStart).getUTCHours() }, // daily, at its edge
        { minute: inside.getUTCMinutes(), hour: "*" }, // hourly
        { minute: { every: 15 }, hour: "*" }, // every 15 minutes
      ];
      const from = t - 6 * 3_600_000;
      const to = t + 6 * 3_600_000;
      const window = enumerate(zone, from, to);
      for (const p of patterns) {
        for (const dstGap of GAPS) {
          for (const dstOverlap of OVERLAPS) {
            const expected = oracle(window, p, dstGap, dstOverlap, from, to);
            const got = nextOccurrences({ cron: cronOf(p), timezone: zone, dstGap, dstOverlap }, new Date(from - 1), expected.length + 1)
              .map((o) => o.at.getTime())
              .filter((x) => x < to);
            expect({ zone, cron: cronOf(p), dstGap, dstOverlap, transition: new Date(t).toISOString(), fires: got.map((x) => new Date(x).toISOString()) }).toEqual({
              zone,
              cron: cronOf(p),
              dstGap,
              dstOverlap,
              transition: new Date(t).toISOString(),
              fires: expected.map((x) => new Date(x).toISOString()),
            });
            // The window-bounded walks (what the materialiser plans with) agree: all of [from, to), and its last two.
            const rule = { cron: cronOf(p), timezone: zone, dstGap, dstOverlap };
            const iso = (xs: number[]) => xs.map((x) => new Date(x).toISOString());
            expect({ zone, cron: cronOf(p), dstGap, dstOverlap, between: iso(occurrencesBetween(rule, new Date(from - 1), new Date(to - 1), 10_000).map((o) => o.at.getTime())) }).toEqual({
              zone, cron: cronOf(p), dstGap, dstOverlap, between: iso(expected),
            });
            expect({ zone, cron: cronOf(p), dstGap, dstOverlap, last: iso(lastOccurrencesBetween(rule, new Date(from - 1), new Date(to - 1), 2).map((o) => o.at.getTime())) }).toEqual({
              zone, cron: cronOf(p), dstGap, dstOverlap, last: iso(expected.slice(-2)),
            });
            // Split at the transition: the part up to it, and the first one after it, from one walk.
            const through = occurrencesThrough(rule, new Date(from - 1), new Date(t), 10_000);
            expect({ zone, cron: cronOf(p), dstGap, dstOverlap, through: iso(through.occurrences.map((o) => o.at.getTime())), next: through.next?.at.toISOString() }).toEqual({
              zone, cron: cronOf(p), dstGap, dstOverlap, through: iso(expected.filter((x) => x <= t)), next: iso(expected.filter((x) => x > t))[0] ?? nextOccurrences(rule, new Date(t), 1)[0]?.at.toISOString(), // past the oracle's window: the walk it checks above
            });
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(list.length * 4 * 6);
  });
});
