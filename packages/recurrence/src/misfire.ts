import { nextOccurrences, occurrencesBetween, type Occurrence, type RecurrenceRule } from "./index.js";

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
  /** Missed occurrences found (at most the scan bound). */
  missed: number;
  /** Missed occurrences that will not run (skip, or beyond max_catch_up). */
  dropped: number;
  /** The latest occurrence handled: the next plan starts after it. */
  through: Date;
  nextFireAt: Date | null;
}

const SCAN_LIMIT = 10_000;

/**
 * What a schedule runs now, by its misfire policy. On-time occurrences (within the threshold) always
 * run. Missed ones: `skip` drops them; `run_latest` runs one job for the latest, saying how many it
 * coalesced; `catch_up` runs each, at most `maxCatchUp` (the most recent ones), released later through
 * the normal rate-limited dispatch. The scan is bounded (SCAN_LIMIT occurrences).
 */
export function planOccurrences(input: PlanInput): Plan {
  const horizon = new Date(input.now.getTime() + input.lookaheadMs);
  const found = occurrencesBetween(input.rule, input.since, horizon, SCAN_LIMIT);
  const cutoff = input.now.getTime() - input.misfireThresholdMs;
  const missed = found.filter((o) => o.at.getTime() < cutoff);
  const onTime = found.filter((o) => o.at.getTime() >= cutoff);
  const runs: PlannedRun[] = [];
  let dropped = 0;
  if (missed.length) {
    if (input.misfire === "skip") dropped = missed.length;
    else if (input.misfire === "run_latest") {
      runs.push({ occurrence: missed[missed.length - 1]!, coalesced: missed.length });
      dropped = missed.length - 1;
    } else {
      const kept = missed.slice(-Math.max(0, input.maxCatchUp));
      runs.push(...kept.map((occurrence) => ({ occurrence })));
      dropped = missed.length - kept.length;
    }
  }
  runs.push(...onTime.map((occurrence) => ({ occurrence })));
  // If the scan hit its bound, continue from where it stopped next time; else from the horizon.
  const through = found.length >= SCAN_LIMIT ? found[found.length - 1]!.at : horizon;
  const next = nextOccurrences(input.rule, through, 1)[0];
  return { runs, missed: missed.length, dropped, through, nextFireAt: next ? next.at : null };
}
