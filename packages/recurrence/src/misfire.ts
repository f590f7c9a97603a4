import { lastOccurrencesBetween, nextOccurrences, occurrencesBetween, occurrencesThrough, type Occurrence, type RecurrenceRule } from "./index.js";

export type MisfirePolicy = "skip" | "run_latest" | "catch_up";

export interface PlanInput {
  rule: RecurrenceRule;
  misfire: MisfirePolicy;
  maxCatchUp: number;
  /** An occurrence later than this past its time counts as missed (the scheduler was down). */
  misfireThresholdMs: number;
  /** Occurrences after this instant are due (the last one materialised, or the schedule's creation). */
  since: Date;
  /** Database time now. */
  now: Date;
  /** Occurrences up to now + lookahead are materialised ahead, so their jobs are waiting when due. */
  lookaheadMs: number;
}

export interface PlannedRun {
  occurrence: Occurrence;
  /** How many missed occurrences this run stands for (run_latest). */
  coalesced?: number;
}

export interface Plan {
  runs: PlannedRun[];
  /** Missed occurrences (counted up to 10,000; a longer outage reports the bound). */
  missed: number;
  /** Missed occurrences that will not run (skip, or beyond max_catch_up). */
  dropped: number;
  /** The latest occurrence handled: the next plan starts after it. */
  through: Date;
  nextFireAt: Date | null;
}

/** Most missed occurrences counted one by one; past it `missed` is this bound (an outage of a week of a per-minute rule). */
const COUNT_LIMIT = 10_000;
/** Most on-time occurrences planned at once (a per-second rule with a day's threshold); the rest next round. */
const ON_TIME_LIMIT = 10_000;

/**
 * What a schedule runs now, by its misfire policy. On-time occurrences (within the threshold) always
 * run. Missed ones: `skip` drops them; `run_latest` runs one job for the latest, saying how many it
 * coalesced; `catch_up` runs each, at most `maxCatchUp` (the most recent ones), released later through
 * the normal rate-limited dispatch.
 *
 * The work follows what the policy needs, not the window: the on-time part is one walk over
 * [now - threshold, now + lookahead]; the missed part is walked back from the cutoff for the one
 * (run_latest) or `maxCatchUp` (catch_up) runs, and counted only when something was missed (up to
 * COUNT_LIMIT). A daily rule's plan over a 2 s window looks at one wall time.
 */
export function planOccurrences(input: PlanInput): Plan {
  const horizon = new Date(input.now.getTime() + input.lookaheadMs);
  // Missed means strictly before the cutoff; instants are whole milliseconds, so (since, cutoff - 1 ms].
  const cutoffMs = input.now.getTime() - input.misfireThresholdMs;
  const lastMissed = new Date(Math.max(input.since.getTime(), Math.min(cutoffMs - 1, horizon.getTime())));
  const { occurrences: onTime, next: afterHorizon } = occurrencesThrough(input.rule, lastMissed, horizon, ON_TIME_LIMIT);
  const wanted = input.misfire === "catch_up" ? Math.max(1, input.maxCatchUp) : 1; // skip needs one to know whether any was missed
  const tail = lastOccurrencesBetween(input.rule, input.since, lastMissed, wanted);
  let missed = tail.length;
  // Count the rest only when the tail did not already hold every missed occurrence.
  if (tail.length === wanted) missed = tail.length + occurrencesBetween(input.rule, input.since, new Date(tail[0]!.at.getTime() - 1), COUNT_LIMIT - tail.length).length;
  const runs: PlannedRun[] = [];
  let dropped = 0;
  if (missed) {
    if (input.misfire === "skip") dropped = missed;
    else if (input.misfire === "run_latest") {
      runs.push({ occurrence: tail[tail.length - 1]!, coalesced: missed });
      dropped = missed - 1;
    } else {
      const kept = input.maxCatchUp > 0 ? tail.slice(-input.maxCatchUp) : [];
      runs.push(...kept.map((occurrence) => ({ occurrence })));
      dropped = missed - kept.length;
    }
  }
  runs.push(...onTime.map((occurrence) => ({ occurrence })));
  // If the on-time walk hit its bound, continue from where it stopped next time; else from the horizon.
  const full = onTime.length >= ON_TIME_LIMIT;
  const through = full ? onTime[onTime.length - 1]!.at : horizon;
  const next = full ? nextOccurrences(input.rule, through, 1)[0] : (afterHorizon ?? undefined);
  return { runs, missed, dropped, through, nextFireAt: next ? next.at : null };
}
