import { CronExpressionParser } from "cron-parser";
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

/** Offsets (minutes) the zone uses around a naive wall time, and the instants that show that wall time. */
function resolveWall(zone: IANAZone, wallMs: number): { instants: number[]; gapEnd?: number } {
  const before = zone.offset(wallMs - DAY);
  const after = zone.offset(wallMs + DAY);
  const instants = [...new Set([before, after])]
    .map((offset) => wallMs - offset * MINUTE)
    .filter((t) => zone.offset(t) * MINUTE === wallMs - t)
    .sort((a, b) => a - b);
  if (instants.length > 0) return { instants };
  // A gap: the transition lies between the two candidate instants; find it to the second.
  let lo = wallMs - Math.max(before, after) * MINUTE;
  let hi = wallMs - Math.min(before, after) * MINUTE;
  const offLo = zone.offset(lo);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (zone.offset(mid) === offLo) lo = mid;
    else hi = mid;
  }
  return { instants: [], gapEnd: hi };
}

/**
 * The next `count` occurrences strictly after `after`, in instant order. Pure: the same inputs give
 * the same answer whatever the machine's time zone.
 */
export function nextOccurrences(rule: RecurrenceRule, after: Date, count: number): Occurrence[] {
  const problems = validateRule(rule);
  if (problems.length) throw new RecurrenceError(problems.join("; "));
  const zone = IANAZone.create(rule.timezone);
  const afterMs = after.getTime();
  // Near a transition, a wall time before `after`'s own can still resolve after it (an overlap's second
  // instance, a gap shifted forward): then start a few hours early. Elsewhere start right at it, so a
  // per-second schedule does not walk hours of candidates.
  const offsetAfter = zone.offset(afterMs);
  const nearTransition = zone.offset(afterMs - 4 * HOUR) !== offsetAfter || zone.offset(afterMs + 4 * HOUR) !== offsetAfter;
  const startWall = afterMs + offsetAfter * MINUTE - (nearTransition ? 4 * HOUR : 0);
  const walls = CronExpressionParser.parse(rule.cron, { currentDate: new Date(startWall - 1000), tz: "UTC" });

  const found = new Map<number, Occurrence>();
  const sorted = () => [...found.values()].sort((a, b) => a.at.getTime() - b.at.getTime());
  for (let guard = 0; guard < 100_000; guard++) {
    const wallMs = walls.next().getTime();
    // No later wall time can resolve before the count-th instant found so far: done. (A wall time W
    // resolves no earlier than W minus the largest offset in force around it.)
    if (found.size >= count) {
      const kth = sorted()[count - 1]!.at.getTime();
      const maxOffset = Math.max(zone.offset(kth - DAY), zone.offset(kth), zone.offset(kth + DAY)) * MINUTE;
      if (wallMs - maxOffset > kth) break;
    }
    const { instants, gapEnd } = resolveWall(zone, wallMs);
    const picks: { at: number; dst?: Occurrence["dst"] }[] = [];
    if (gapEnd !== undefined) {
      if (rule.dstGap === "shift_forward") picks.push({ at: gapEnd, dst: "gap_shifted" });
    } else if (instants.length === 2) {
      if (rule.dstOverlap !== "last") picks.push({ at: instants[0]!, dst: "overlap_first" });
      if (rule.dstOverlap !== "first") picks.push({ at: instants[1]!, dst: "overlap_last" });
    } else {
      picks.push({ at: instants[0]! });
    }
    for (const pick of picks) {
      if (pick.at <= afterMs || found.has(pick.at)) continue; // same instant from an earlier nominal time: fire once
      found.set(pick.at, {
        at: new Date(pick.at),
        nominal: naiveIso(wallMs),
        offsetMinutes: zone.offset(pick.at),
        ...(pick.dst ? { dst: pick.dst } : {}),
      });
    }
  }
  return sorted().slice(0, count);
}

/** Occurrences in (from, to], at most `limit` (misfire handling counts and picks from these). */
export function occurrencesBetween(rule: RecurrenceRule, from: Date, to: Date, limit: number): Occurrence[] {
  const out: Occurrence[] = [];
  let cursor = from;
  while (out.length < limit) {
    const batch = nextOccurrences(rule, cursor, Math.min(100, limit - out.length));
    for (const o of batch) {
      if (o.at.getTime() > to.getTime()) return out;
      out.push(o);
    }
    if (batch.length === 0) return out;
    cursor = batch[batch.length - 1]!.at;
  }
  return out;
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
