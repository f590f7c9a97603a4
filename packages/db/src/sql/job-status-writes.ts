// Every statement that writes jobs.status, with the transition it performs, in one table. The statements
// interpolate their from-states and to-states from here (the text is the same as if written out), so the
// table is what the SQL does; the architecture test (tooling/architecture) checks each entry against the
// state machine in @tick/core and fails on a status write in SQL that does not come from this table.
import type { JobEvent, JobState } from "@tick/core";

export type JobStatusWrite =
  /** Moves jobs out of `from`: through each event, to the state it names. */
  | { readonly from: readonly JobState[]; readonly to: Readonly<Partial<Record<JobEvent, JobState>>> }
  /** Inserts jobs, in this state. */
  | { readonly creates: JobState };

export const JOB_STATUS_WRITES = {
  insertJobs: { creates: "scheduled" },
  insertOccurrenceJobs: { creates: "scheduled" },
  claimDueJobs: { from: ["scheduled"], to: { dispatch: "dispatched" } },
  expireOverdueJobs: { from: ["scheduled", "dispatched"], to: { expire: "expired" } },
  cancelJobBeforeStart: { from: ["scheduled", "dispatched"], to: { cancel: "cancelled" } },
  startAttempt: { from: ["dispatched"], to: { start: "running" } },
  requeueAttempt: { from: ["dispatched"], to: { requeue: "scheduled" } },
  // A job whose cancel was recorded while its attempt ran is abandoned unless the attempt succeeded (the cancel's 202).
  completeAttempt: { from: ["running"], to: { succeed: "succeeded", retry: "scheduled", fail: "dead", expire: "expired", abandon: "cancelled" } },
  settleExpiredLease: { from: ["running"], to: { retry: "scheduled", fail: "dead", expire: "expired", abandon: "cancelled" } },
  releaseReplayJobs: { from: ["dead"], to: { replay: "scheduled" } },
  dropRateLimitedJobs: { from: ["scheduled"], to: { rate_limit: "rate_limited" } },
} as const satisfies Record<string, JobStatusWrite>;

/** The event an attempt's decision performs on its job (completeAttempt, settleExpiredLease in finish.ts). */
export const DECISION_EVENT = { succeeded: "succeed", retry: "retry", dead: "fail", expired: "expire", cancelled: "abandon" } as const satisfies Record<string, JobEvent>;

/** A state as an SQL literal: `'running'`. */
export const stateLiteral = (state: JobState): string => `'${state}'`;

/** The condition that `column` holds one of `states`: `status = 'dispatched'`, `status IN ('scheduled', 'dispatched')`. */
export function statusIn(column: string, states: readonly JobState[]): string {
  if (states.length === 0) throw new Error(`statusIn(${column}): no states`);
  return states.length === 1 ? `${column} = ${stateLiteral(states[0]!)}` : `${column} IN (${states.map(stateLiteral).join(", ")})`;
}
