import { CronExpressionParser, type CronExpression } from "cron-parser";
import { IANAZone } from "luxon";

/**
 * Recurring schedules: a cron expression read in an IANA time zone, with an explicit, per-schedule
 * policy for the two DST edge cases (S14). Every occurrence is resolved fresh against the zone's rules;
 * nothing here reads the system time zone or the clock (callers pass instants in).
 *
 * How: cron fields are matched against *local wall-clock times* (enumerated as naive times), and each
 * matching wall time is then resolved to real instants in the zone:
 * - exists once: that instant;
 * - does not exist (spring-forward gap): `shift_forward` fires at the first valid instant after the
 *   gap (the transition itself), `skip` does not fire;
 * - exists twice (fall-back overlap): `first`, `last` or `both` instants.
 * Several nominal times that resolve to the same instant (every 15 minutes inside a one-hour gap, all
 * shifted to its end) fire once.
 */
export type DstGapPolicy = "shift_forward" | "skip";
export type DstOverlapPolicy = "first" | "last" | "both";

export interface RecurrenceRule {
  cron: string;
  timezone: string;
  dstGap: DstGapPolicy;
  dstOverlap: DstOverlapPolicy;
}

export interface Occurrence {
  /** The instant to fire at. */
  at: Date;
  /** The nominal local wall time the cron matched, e.g. "2026-03-08T02:30:00" (no offset). */
  nominal: string;
  /** UTC offset in minutes at `at`. */
  offsetMinutes: number;
  /** Where the DST policy changed the result. */
  dst?: "gap_shifted" | "overlap_first" | "overlap_last";
}

const MINUTE = 60_000;
const DAY = 86_400_000;
const HOUR = 60 * MINUTE;

export class RecurrenceError extends Error {}

/** Refuses unknown zones and fixed offsets ("+02:00", "UTC+2", "Etc/GMT-2"): a schedule needs real rules. */
export function validateRule(rule: Pick<RecurrenceRule, "cron" | "timezone">): string[] {
  const problems: string[] = [];
  if (/^(UTC|GMT)?\s*[+-]\d|^Etc\/GMT[+-]/i.test(rule.timezone)) problems.push(`timezone: ${rule.timezone} is a fixed offset; use an IANA zone such as Europe/Paris`);
  else if (!IANAZone.isValidZone(rule.timezone)) problems.push(`timezone: ${rule.timezone} is not a known IANA zone`);
  const fields = rule.cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) problems.push("cron: use 5 fields (minute hour day month weekday) or 6 with seconds first");
  else {
    try {
      CronExpressionParser.parse(rule.cron, { tz: "UTC" });
    } catch (err) {
      problems.push(`cron: ${(err as Error).message}`);
    }
  }
  return problems;
}

function naiveIso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

type OffsetAt = (instantMs: number) => number;

/**
 * The first whole second in (lo, hi] whose offset differs from `offLo` (lo's), given hi's does: a
 * bisection to the second (transitions fall on whole seconds; lo and hi are whole seconds).
 */
function firstChange(offsetAt: OffsetAt, lo: number, hi: number, offLo: number): number {
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (offsetAt(mid) === offLo) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * The zone's UTC offset (minutes) as a function of the instant, from a handful of Intl lookups per
 * stretch of time instead of one per call (each lookup formats a date: a per-second schedule near a
 * transition asked for hundreds of thousands and held the scheduler's event loop for seconds). The offset
 * is constant between transitions, which fall on whole seconds; each lookup caches the stretch around the
 * instant, probed 6 hours each side and cut at a transition found there (one per side at most).
 */
function offsetTimeline(zone: IANAZone): OffsetAt {
  const raw = (t: number) => zone.offset(t);
  const stretches: { start: number; end: number; offset: number }[] = []; // offset constant on [start, end)
  const PROBE = 6 * HOUR;
  return (t) => {
    for (const s of stretches) if (s.start <= t && t < s.end) return s.offset;
    const second = Math.floor(t / 1000) * 1000;
    const offset = raw(second);
    const before = raw(second - PROBE);
    const after = raw(second + PROBE);
    const start = before === offset ? second - PROBE : firstChange(raw, second - PROBE, second, before);
    const end = after === offset ? second + PROBE : firstChange(raw, second, second + PROBE, offset);
    if (stretches.length >= 64) stretches.shift();
    stretches.push({ start, end, offset });
    return offset;
  };
}

/** The first transition in (fromMs, fromMs + withinMs], if any: when, and the offsets either side. */
function nextTransition(offsetAt: OffsetAt, fromMs: number, withinMs: number): { at: number; from: number; to: number } | undefined {
  const from = offsetAt(fromMs);
  const until = fromMs + withinMs;
  // Step by less than the timeline's probe so no transition is stepped over, then find it to the second.
  let lo = Math.floor(fromMs / 1000) * 1000;
  for (let t = lo + HOUR; lo < until; lo = t, t += HOUR) {
    const off = offsetAt(Math.min(t, until));
    if (off === from) continue;
    return { at: firstChange(offsetAt, lo, Math.min(t, until), from), from, to: off };
  }
  return undefined;
}

/** Offsets (minutes) the zone uses around a naive wall time, and the instants that show that wall time. */
function resolveWall(offsetAt: OffsetAt, wallMs: number): { instants: number[]; gapEnd?: number } {
  const before = offsetAt(wallMs - DAY);
  const after = offsetAt(wallMs + DAY);
  const instants = [...new Set([before, after])]
    .map((offset) => wallMs - offset * MINUTE)
    .filter((t) => offsetAt(t) * MINUTE === wallMs - t)
    .sort((a, b) => a - b);
  if (instants.length > 0) return { instants };
  // A gap: the transition lies between the two candidate instants; find it to the second.
  const lo = wallMs - Math.max(before, after) * MINUTE;
  const hi = wallMs - Math.min(before, after) * MINUTE;
  return { instants: [], gapEnd: firstChange(offsetAt, lo, hi, offsetAt(lo)) };
}

// Rules are validated once per (cron, zone) and each zone's offset timeline is kept across calls: the
// materialiser plans thousands of schedules per second over a handful of rules and zones, and both are
// pure (zone rules do not change inside a process). Bounded so a stream of distinct rules cannot grow them.
const CACHE_LIMIT = 1_000;
const validRules = new Set<string>();
const timelines = new Map<string, OffsetAt>();
// One parsed expression per cron, reset to each walk's start (parsing was a fifth of a plan's time).
// Safe to share: a walk is synchronous and the only user of the expression while it runs.
const expressions = new Map<string, CronExpression>();

function wallsOf(cron: string, fromWallMs: number): CronExpression {
  let expression = expressions.get(cron);
  if (!expression) {
    if (expressions.size >= CACHE_LIMIT) expressions.clear();
    expression = CronExpressionParser.parse(cron, { currentDate: new Date(fromWallMs), tz: "UTC" });
    expressions.set(cron, expression);
  }
  expression.reset(new Date(fromWallMs));
  return expression;
}

function checkedTimeline(rule: RecurrenceRule): OffsetAt {
  const key = `${rule.timezone}\u0000${rule.cron}`;
  if (!validRules.has(key)) {
    const problems = validateRule(rule);
    if (problems.length) throw new RecurrenceError(problems.join("; "));
    if (validRules.size >= CACHE_LIMIT) validRules.clear();
    validRules.add(key);
  }
  let timeline = timelines.get(rule.timezone);
  if (!timeline) {
    if (timelines.size >= CACHE_LIMIT) timelines.clear();
    timeline = offsetTimeline(IANAZone.create(rule.timezone));
    timelines.set(rule.timezone, timeline);
  }
  return timeline;
}

/**
 * The first `count` occurrences in (afterMs, untilMs], in instant order. The walk stops as soon as no
 * later wall time can resolve before the count-th instant found or at or before `untilMs`, so its work
 * is proportional to the occurrences returned (a 2 s window of a daily rule looks at one wall time).
 */
function walk(rule: RecurrenceRule, afterMs: number, count: number, untilMs: number, andNext = false): { within: Occurrence[]; next?: Occurrence } {
  const offsetAt = checkedTimeline(rule);
  if (count <= 0 || (untilMs <= afterMs && !andNext)) return { within: [] };
  // Wall times from `after`'s own onwards resolve after it, with one exception: when the clocks are about
  // to go back, the repeated hour's second instances (policies `last` and `both`) come after `after`
  // although their wall times are earlier. Start there then, and nowhere earlier, so a per-second schedule
  // never walks candidates that cannot fire. (A gap's wall times all lie after `after`'s own.)
  let startWall = afterMs + offsetAt(afterMs) * MINUTE;
  const back = rule.dstOverlap === "first" ? undefined : nextTransition(offsetAt, afterMs, 4 * HOUR);
  if (back && back.to < back.from) startWall = Math.min(startWall, back.at + back.to * MINUTE);
  const wallsFrom = (wallMs: number) => wallsOf(rule.cron, wallMs - 1000);
  let walls = wallsFrom(startWall);
  // A wall time W resolves no earlier than W minus the largest offset in force around the instant: past
  // `untilMs` plus that, nothing more can land inside the window.
  const untilWall = Number.isFinite(untilMs) && !andNext ? untilMs + Math.max(offsetAt(untilMs - DAY), offsetAt(untilMs), offsetAt(untilMs + DAY)) * MINUTE : Infinity;

  const found = new Map<number, Occurrence>();
  let next: Occurrence | undefined; // with andNext: the earliest occurrence after untilMs seen so far
  const order: number[] = []; // the instants found, ascending
  const insert = (at: number) => {
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (order[mid]! < at) lo = mid + 1;
      else hi = mid;
    }
    order.splice(lo, 0, at);
  };
  for (let guard = 0; guard < 100_000; guard++) {
    const wallMs = walls.next().getTime();
    if (wallMs > untilWall) break;
    // No later wall time can resolve before the count-th instant found so far: done. (A wall time W
    // resolves no earlier than W minus the largest offset in force around it.)
    // With andNext, the same holds for the earliest occurrence past the window: once no later wall time
    // can resolve before it, every occurrence inside the window has been found too.
    const bound = found.size >= count ? order[count - 1] : next?.at.getTime();
    if (bound !== undefined) {
      const kth = bound;
      const maxOffset = Math.max(offsetAt(kth - DAY), offsetAt(kth), offsetAt(kth + DAY)) * MINUTE;
      if (wallMs - maxOffset > kth) break;
    }
    const { instants, gapEnd } = resolveWall(offsetAt, wallMs);
    const picks: { at: number; dst?: Occurrence["dst"] }[] = [];
    if (gapEnd !== undefined) {
      if (rule.dstGap === "shift_forward") picks.push({ at: gapEnd, dst: "gap_shifted" });
      // Every later wall time in the gap resolves the same way (to this instant, once, or not at all):
      // continue after the gap instead of walking it (an hour is 3,600 candidates of a per-second cron).
      walls = wallsFrom(gapEnd + offsetAt(gapEnd) * MINUTE);
    } else if (instants.length === 2) {
      if (rule.dstOverlap !== "last") picks.push({ at: instants[0]!, dst: "overlap_first" });
      if (rule.dstOverlap !== "first") picks.push({ at: instants[1]!, dst: "overlap_last" });
    } else {
      picks.push({ at: instants[0]! });
    }
    for (const pick of picks) {
      if (pick.at <= afterMs || found.has(pick.at)) continue; // same instant from an earlier nominal time: fire once
      if (pick.at > untilMs) {
        if (andNext && (!next || pick.at < next.at.getTime())) next = { at: new Date(pick.at), nominal: naiveIso(wallMs), offsetMinutes: offsetAt(pick.at), ...(pick.dst ? { dst: pick.dst } : {}) };
        continue;
      }
      insert(pick.at);
      found.set(pick.at, {
        at: new Date(pick.at),
        nominal: naiveIso(wallMs),
        offsetMinutes: offsetAt(pick.at),
        ...(pick.dst ? { dst: pick.dst } : {}),
      });
    }
    // With one instant per wall time (any policy but `both`), later wall times never resolve earlier:
    // once this one lands past the count-th instant (or past the window), nothing after it can come
    // before. (Without this, `last` walked the whole repeated hour: its first instances, which it never
    // fires, look early.)
    if (rule.dstOverlap !== "both" && picks.length > 0 && (picks[0]!.at > untilMs || (found.size >= count && picks[0]!.at > order[count - 1]!))) break;
  }
  const within = order.slice(0, count).map((at) => found.get(at)!);
  // Past the count-th, the next one was not looked for: the caller continues from the last.
  return found.size >= count ? { within } : { within, ...(next ? { next } : {}) };
}

/**
 * The next `count` occurrences strictly after `after`, in instant order. Pure: the same inputs give
 * the same answer whatever the machine's time zone.
 */
export function nextOccurrences(rule: RecurrenceRule, after: Date, count: number): Occurrence[] {
  return walk(rule, after.getTime(), count, Infinity).within;
}

/**
 * Occurrences in (from, to], at most `limit`, the earliest first (misfire handling counts and picks
 * from these). One walk bounded by the window: the work is proportional to what it returns.
 */
export function occurrencesBetween(rule: RecurrenceRule, from: Date, to: Date, limit: number): Occurrence[] {
  return walk(rule, from.getTime(), limit, to.getTime()).within;
}

/**
 * Occurrences in (from, to], at most `limit`, and the first one after `to` (null if there is none or
 * the limit was reached): what a plan needs, in one walk instead of two.
 */
export function occurrencesThrough(rule: RecurrenceRule, from: Date, to: Date, limit: number): { occurrences: Occurrence[]; next: Occurrence | null } {
  const { within, next } = walk(rule, from.getTime(), limit, to.getTime(), true);
  return { occurrences: within, next: next ?? null };
}

/**
 * The last `count` occurrences in (from, to], the earliest first. Walks back from `to` by a span that
 * doubles until it holds `count` occurrences or reaches `from`, so the work is proportional to about
 * twice the occurrences returned, not to the window (a month of a per-minute rule for run_latest's one).
 */
export function lastOccurrencesBetween(rule: RecurrenceRule, from: Date, to: Date, count: number): Occurrence[] {
  const fromMs = from.getTime();
  const toMs = to.getTime();
  if (count <= 0 || toMs <= fromMs) return [];
  for (let span = 1_000 * count; ; span *= 2) {
    const start = Math.max(fromMs, toMs - span);
    // Within the span the walk returns every occurrence (at most all of them are asked for): keep the tail.
    const got = walk(rule, start, Number.MAX_SAFE_INTEGER, toMs).within;
    if (got.length >= count || start === fromMs) return got.slice(-count);
  }
}

/**
 * The idempotency key of a schedule occurrence: derived from the schedule and the nominal local time
 * (plus the offset, so the two instances of an overlap with policy `both` differ). Backed by a unique
 * constraint, so two schedulers can never create the same occurrence twice.
 */
export function occurrenceKey(scheduleId: string, occurrence: Occurrence): string {
  const sign = occurrence.offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(occurrence.offsetMinutes);
  return `schedule:${scheduleId}:${occurrence.nominal}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}
export * from "./misfire.js";
