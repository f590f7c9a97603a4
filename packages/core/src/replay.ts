/**
 * DLQ replay (S17) as data: the replay lifecycle, the pacing of releases and the failure-rate judgment
 * that pauses a replay whose root cause is still there. Pure: the API, the scheduler's replay loop and
 * the tests share it. Mirrors the `replay_status` enum in prisma/schema.prisma.
 */

export const REPLAY_STATES = ["running", "paused", "auto_paused", "cancelled", "completed"] as const;
export type ReplayState = (typeof REPLAY_STATES)[number];

/** pause/resume/cancel come from an operator; autoPause and complete from the scheduler. */
export const REPLAY_ACTIONS = ["pause", "resume", "cancel", "autoPause", "complete"] as const;
export type ReplayAction = (typeof REPLAY_ACTIONS)[number];

/** Every pair not listed here is refused. */
export const REPLAY_TRANSITIONS: Readonly<Record<ReplayState, Readonly<Partial<Record<ReplayAction, ReplayState>>>>> = {
  running: { pause: "paused", cancel: "cancelled", autoPause: "auto_paused", complete: "completed" },
  // A paused replay with nothing left to release and nothing in flight is over: it completes rather than
  // waiting forever for a resume that would do nothing.
  paused: { resume: "running", cancel: "cancelled", complete: "completed" },
  // Resuming an auto-paused replay is the operator saying the root cause is fixed: judged afresh.
  auto_paused: { resume: "running", cancel: "cancelled", complete: "completed" },
  cancelled: {},
  completed: {},
};

export function replayTransition(from: ReplayState, action: ReplayAction): ReplayState | null {
  return REPLAY_TRANSITIONS[from][action] ?? null;
}

/**
 * The replay is already where `action` leads (paused for pause, running for resume, cancelled for cancel):
 * asking again is a repeat, answered as done, not refused (a client whose answer was lost asks again).
 */
export function isReplayActionRepeat(state: ReplayState, action: ReplayAction): boolean {
  return REPLAY_STATES.some((from) => REPLAY_TRANSITIONS[from][action] === state);
}

/** States an operator action may start from, for conditional SQL updates. */
export function replayStatesAllowing(action: ReplayAction): ReplayState[] {
  return REPLAY_STATES.filter((s) => replayTransition(s, action) !== null);
}

export const REPLAY_DEFAULTS = {
  /** Finite by default: a replay never releases faster than this unless asked. */
  ratePerSecond: 10,
  maxRatePerSecond: 1_000,
  failureThreshold: 0.5,
  failureWindow: 20,
  attempts: 1,
  maxAttempts: 20,
  /** Most jobs one replay takes; replay the rest with another once it is done. */
  maxJobs: 100_000,
} as const;

/**
 * How many jobs to release now and the due time of each: one slot every 1/rate seconds from the next
 * free slot (never before now), for slots up to `horizonMs` ahead. Released jobs wait in the scheduled
 * state until their slot, so the dispatcher starts them evenly spaced rather than in bursts.
 */
export function planReleases(args: {
  nowMs: number;
  nextSlotMs: number | null;
  ratePerSecond: number;
  horizonMs: number;
  remaining: number;
  maxBatch: number;
}): { count: number; firstSlotMs: number; spacingMs: number; nextSlotMs: number } {
  const spacingMs = 1000 / args.ratePerSecond;
  const firstSlotMs = Math.max(args.nowMs, args.nextSlotMs ?? args.nowMs);
  const fits = Math.floor((args.nowMs + args.horizonMs - firstSlotMs) / spacingMs);
  const count = Math.max(0, Math.min(fits, args.remaining, args.maxBatch));
  return { count, firstSlotMs, spacingMs, nextSlotMs: firstSlotMs + count * spacingMs };
}

export interface FirstOutcome {
  outcome: "succeeded" | "failed";
  /** "timeout", "http_status 500", ...: what the failed attempt reported. */
  error: string | null;
}

/**
 * The auto-pause judgment over the most recent first attempts of replayed jobs (newest first). Judged
 * once `window` outcomes are in (or all of a smaller replay's); pauses when the failure rate is above
 * the threshold, with a reason an operator can act on.
 */
export function judgeFailureRate(
  recent: FirstOutcome[],
  opts: { window: number; threshold: number; total: number },
): { pause: false; rate: number | null } | { pause: true; rate: number; reason: string; summary: string } {
  const needed = Math.max(1, Math.min(opts.window, opts.total));
  const sample = recent.slice(0, opts.window);
  if (sample.length < needed) return { pause: false, rate: null };
  const failed = sample.filter((o) => o.outcome === "failed");
  const rate = failed.length / sample.length;
  if (rate <= opts.threshold) return { pause: false, rate };
  const kinds = new Map<string, number>();
  for (const f of failed) kinds.set(f.error ?? "unknown", (kinds.get(f.error ?? "unknown") ?? 0) + 1);
  const top = [...kinds.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3)
    .map(([k, n]) => `${k} (${n})`)
    .join(", ");
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const summary = `${failed.length} of the last ${sample.length} replayed jobs failed again (${pct(rate)}, threshold ${pct(opts.threshold)}). Errors: ${top}.`;
  return { pause: true, rate, summary, reason: `Paused automatically: ${summary} The root cause looks unfixed; resume once it is.` };
}
