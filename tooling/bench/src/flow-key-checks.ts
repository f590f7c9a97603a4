// The flow-key scenarios' verdicts (flow-keys.ts), computed from what the sink and the API answered: pure, so
// the suite's test checks them on made-up calls.

/** A call the sink received: the job's flow key (or label), when it arrived and when the sink answered (ms). */
export interface SinkCall {
  key: string;
  start: number;
  end: number;
}

/**
 * Per key, the most calls the sink had open at once. A call that ends at the instant another starts does not
 * overlap it (the next one was sent after the answer).
 */
export function maxOpenByKey(calls: readonly SinkCall[]): Map<string, number> {
  const events = new Map<string, [number, number][]>();
  for (const c of calls) {
    let list = events.get(c.key);
    if (!list) events.set(c.key, (list = []));
    list.push([c.start, 1], [c.end, -1]);
  }
  const most = new Map<string, number>();
  for (const [key, list] of events) {
    // By time; at one instant ends before starts.
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let max = 0;
    for (const [, d] of list) max = Math.max(max, (open += d));
    most.set(key, max);
  }
  return most;
}

/**
 * How long a key's freed slot stays empty: per key, its calls by start; the k-th (k ≥ cap) could start only once
 * the (k − cap)-th of its calls by end had ended, and the gap is between that end and its start (ms). Where a key
 * always has a job due, the gaps are the dispatch's latency from a completion to the key's next call.
 */
export function slotRefillGaps(calls: readonly SinkCall[], cap: number): number[] {
  const byKey = new Map<string, SinkCall[]>();
  for (const c of calls) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c]);
  const gaps: number[] = [];
  for (const list of byKey.values()) {
    const starts = list.map((c) => c.start).sort((a, b) => a - b);
    const ends = list.map((c) => c.end).sort((a, b) => a - b);
    for (let k = cap; k < starts.length; k++) gaps.push(starts[k]! - ends[k - cap]!);
  }
  return gaps;
}

export interface RateCheck {
  /** Key-seconds judged: every key × every whole second after the first. */
  keySeconds: number;
  /** Key-seconds whose calls were more than `tolerance` off the rate. */
  keySecondsOff: number;
  /** The largest |calls in a second − rate| over every key-second judged. */
  maxDeviation: number;
  /** Key-seconds by their number of calls ("5": 5,812). */
  histogram: Record<string, number>;
  /** The worst key-seconds (second 1 is the first judged), up to 5, largest deviation first. */
  worst: { key: string; second: number; calls: number }[];
}

/**
 * Each key's calls in whole seconds from `origin` (the first call of the run): second i is [origin + i s,
 * origin + (i + 1) s). Second 0 holds the token bucket's burst and is not judged; seconds 1 to `seconds` − 1 are,
 * for every key in `keys` (a key with no call in a second counts 0 there).
 */
export function checkRate(startsByKey: ReadonlyMap<string, readonly number[]>, keys: readonly string[], origin: number, seconds: number, rate: number, tolerance = 1): RateCheck {
  const histogram: Record<string, number> = {};
  const all: { key: string; second: number; calls: number }[] = [];
  let maxDeviation = 0;
  let keySecondsOff = 0;
  for (const key of keys) {
    const counts = Array.from({ length: seconds }, () => 0);
    for (const t of startsByKey.get(key) ?? []) {
      const s = Math.floor((t - origin) / 1_000);
      if (s >= 0 && s < seconds) counts[s]!++;
    }
    for (let s = 1; s < seconds; s++) {
      const calls = counts[s]!;
      const off = Math.abs(calls - rate);
      histogram[String(calls)] = (histogram[String(calls)] ?? 0) + 1;
      maxDeviation = Math.max(maxDeviation, off);
      if (off > tolerance) keySecondsOff++;
      all.push({ key, second: s, calls });
    }
  }
  const worst = all
    .filter((x) => Math.abs(x.calls - rate) > tolerance)
    .sort((a, b) => Math.abs(b.calls - rate) - Math.abs(a.calls - rate) || a.second - b.second)
    .slice(0, 5);
  return { keySeconds: all.length, keySecondsOff, maxDeviation, histogram, worst };
}

/** A debounced create as the API answered it: its key and sequence number, and the job it made or folded into. */
export interface DebounceCreate {
  key: string;
  seq: number;
  jobId: string;
}

/** A run the sink saw: the job (its Tick-Job-Id header) and the sequence number in the body it carried. */
export interface DebounceRun {
  jobId: string;
  seq: number;
}

export interface DebounceCheck {
  keys: number;
  /** Windows: the distinct jobs the creates made or folded into. */
  windows: number;
  /** The most windows one key had (1 when no key's creates paused for longer than the period). */
  maxWindowsPerKey: number;
  windowsRunOnce: number;
  /** Windows run exactly once, with the payload of the last create folded into them. */
  windowsRunOnceWithLastPayload: number;
  /** Windows whose job never ran, or ran more than once. */
  windowsNotRun: number;
  windowsRunTwiceOrMore: number;
  /** Sink calls for a job no create was answered with. */
  strayRuns: number;
}

/**
 * One run per window with its last payload. Each key's creates are sent in increasing `seq`, each after the
 * previous one's answer (or in one batch, where a key's items fold in order), so a window's last create is its
 * highest `seq`.
 */
export function checkDebounce(creates: readonly DebounceCreate[], runs: readonly DebounceRun[]): DebounceCheck {
  const lastOf = new Map<string, number>();
  const windowsOfKey = new Map<string, Set<string>>();
  for (const c of creates) {
    lastOf.set(c.jobId, Math.max(lastOf.get(c.jobId) ?? -Infinity, c.seq));
    let w = windowsOfKey.get(c.key);
    if (!w) windowsOfKey.set(c.key, (w = new Set()));
    w.add(c.jobId);
  }
  const runsOf = new Map<string, number[]>();
  let strayRuns = 0;
  for (const r of runs) {
    if (!lastOf.has(r.jobId)) {
      strayRuns++;
      continue;
    }
    runsOf.set(r.jobId, [...(runsOf.get(r.jobId) ?? []), r.seq]);
  }
  let once = 0;
  let onceWithLast = 0;
  let notRun = 0;
  let twice = 0;
  for (const [jobId, last] of lastOf) {
    const seen = runsOf.get(jobId) ?? [];
    if (seen.length === 0) notRun++;
    else if (seen.length > 1) twice++;
    else {
      once++;
      if (seen[0] === last) onceWithLast++;
    }
  }
  return {
    keys: windowsOfKey.size,
    windows: lastOf.size,
    maxWindowsPerKey: Math.max(0, ...[...windowsOfKey.values()].map((w) => w.size)),
    windowsRunOnce: once,
    windowsRunOnceWithLastPayload: onceWithLast,
    windowsNotRun: notRun,
    windowsRunTwiceOrMore: twice,
    strayRuns,
  };
}
