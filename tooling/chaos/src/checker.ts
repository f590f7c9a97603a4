import type pg from "pg";
import type { ChaosSink, Delivery, KeyedCall } from "./sink.js";
import { measureStartLags } from "./start-lag.js";
import { KEYED_QUEUES, type DebounceAnswer, type Op } from "./workload.js";

interface PhaseRow {
  phase: string;
  scenarios: string;
  faults: number;
  jobs: number;
  lost: number;
  duplicateEffects: number;
  rawDuplicateDeliveries: number;
  /** The quiet tenant's worst and 99th-percentile lag (create → first delivery) for jobs created in the phase. */
  quietMaxLagMs: number | null;
  quietP99LagMs: number | null;
  /** Where the time went for the quiet tenant's slowest job of the phase (to tell a stall from a slow API). */
  quietSlowest?: string;
  /** Every tenant's worst start lag (attempt start − due, see start-lag.ts) among attempts due in the phase. */
  maxStartLagMs: number | null;
  /** What a single-fault phase's max start lag is held to (fault + 2 lease TTLs + slack); null: not judged. */
  startLagBoundMs: number | null;
  /** The attempt behind maxStartLagMs. */
  startLagSlowest?: string;
}

/** A phase as run: its host-clock window, and how long its fault lasted (null: not one fault, not judged). */
export interface PhaseRun {
  name: string;
  scenarios: string;
  faults: number;
  startedAt: number;
  endedAt: number;
  faultMs: number | null;
  /** When the phase's fault began (host ms), if later than startedAt (set-up ran first); default startedAt. */
  faultAt?: number;
}

export interface Verdict {
  rows: PhaseRow[];
  totals: { jobs: number; lost: number; duplicateEffects: number; rawDuplicateDeliveries: number; faults: number };
  /** Every broken invariant, in words; empty means the run passed. */
  violations: string[];
  facts: Record<string, number>;
  flowKeys: FlowKeySummary;
}

/** What the flow-key checks saw, for the report. */
interface FlowKeySummary {
  capped: { cap: number; keys: number; calls: number; maxAtOnce: number; settledLeases: number; overlapsExcused: number; excusedAttempts: string[]; violations: number };
  rated: { limit: number; periodMs: number; keys: number; claims: number; maxInPeriod: number; periodBound: number; overBucket: number; keysOverPeriodBound: number };
  debounce: Omit<DebounceVerdict, "violations" | "lost"> & { lost: number; violations: number };
}

/**
 * How much earlier than the claim of a trailing window's job the key's next window may open (its job's created_at)
 * before it counts as two windows at once: the create's transaction takes its time when it begins, then may wait
 * for that claim's commit (checkDebounceWindows).
 */
const DEBOUNCE_CLAIM_TOLERANCE_MS = 1_000;

/**
 * One job's path from the create request to its first delivery, in ms: the API's acknowledgement, then
 * (database clock, which may be injected: only differences are used) dispatch (published right after),
 * a re-publish through the outbox if the reaper had to make one, the attempt's start, and finally the
 * downstream's receipt.
 */
async function explainLag(pool: pg.Pool, op: Op, lag: number, deliveredAt: number): Promise<string> {
  const { rows } = await pool.query<{ to_dispatch: number | null; to_republish: number | null; to_start: number | null; attempts: number }>(
    `SELECT (SELECT extract(epoch FROM min(a.dispatched_at) - j.created_at) * 1000 FROM history.attempts_all a WHERE a.job_id = j.id) AS to_dispatch,
            (SELECT extract(epoch FROM min(o.published_at) - j.created_at) * 1000 FROM outbox o WHERE o.job_id = j.id AND o.kind = 'dispatch') AS to_republish,
            (SELECT extract(epoch FROM min(a.started_at) - j.created_at) * 1000 FROM history.attempts_all a WHERE a.job_id = j.id) AS to_start,
            (SELECT count(*)::int FROM history.attempts_all a WHERE a.job_id = j.id) AS attempts
       FROM history.jobs_all j WHERE j.id = $1`,
    [op.jobId],
  );
  const r = rows[0];
  const ms = (v: number | null | undefined) => (v === null || v === undefined ? "-" : `${Math.round(Number(v))}`);
  const acked = op.ackedAt !== undefined ? op.ackedAt - op.createdAt : null;
  return (
    `${op.key}: ${lag} ms to the first delivery; acknowledged after ${ms(acked)} ms (${op.createRetries} retries); ` +
    `from the job's creation: dispatched +${ms(r?.to_dispatch)}, ${r?.to_republish === null || r?.to_republish === undefined ? "not re-published" : `re-published +${ms(r.to_republish)}`}, started +${ms(r?.to_start)} ms; ` +
    `${r?.attempts ?? 0} attempts; delivered ${deliveredAt - (op.ackedAt ?? op.createdAt)} ms after the acknowledgement`
  );
}

/**
 * Where a key had more calls open at once than its cap, from the downstream's record of each call. A call is
 * recorded from its arrival to its answer, which lies inside its attempt's span from the claim to the attempt's
 * end: the span the claim counts against the key (flow_keys.in_flight). The one documented way past a cap: a
 * worker frozen past its lease, whose attempt the reaper settled (lease_expired) and whose slot went to the next
 * attempt, wakes and sends its request anyway. Such a call no longer holds a slot, so an overlap is excused when
 * the calls of attempts not settled that way still fit the cap; any other overlap is a violation. Counted per
 * call that took a key past its cap.
 */
export function keyCapOverlaps(
  calls: readonly KeyedCall[],
  cap: number,
  settledAttempts: ReadonlySet<string>,
): { violations: string[]; excused: number; excusedAttempts: string[]; maxAtOnce: number } {
  const violations: string[] = [];
  let excused = 0;
  const excusedAttempts = new Set<string>();
  /** The most calls at once of one key that held slots (settled attempts' calls left out): at most the cap. */
  let maxAtOnce = 0;
  const byKey = new Map<string, KeyedCall[]>();
  for (const c of calls) byKey.set(c.flowKey, [...(byKey.get(c.flowKey) ?? []), c]);
  for (const [flowKey, keyCalls] of byKey) {
    // Ends before starts at the same instant: a call answered at t and one arriving at t never overlap.
    const events = keyCalls
      .flatMap((c) => [
        { at: c.start, open: true, call: c },
        { at: c.end, open: false, call: c },
      ])
      .sort((a, b) => a.at - b.at || Number(a.open) - Number(b.open));
    const open = new Set<KeyedCall>();
    for (const e of events) {
      if (!e.open) {
        open.delete(e.call);
        continue;
      }
      open.add(e.call);
      const holding = [...open].filter((c) => !settledAttempts.has(c.attemptId));
      maxAtOnce = Math.max(maxAtOnce, holding.length);
      if (open.size <= cap) continue;
      if (holding.length <= cap) {
        excused++;
        for (const c of open) if (settledAttempts.has(c.attemptId)) excusedAttempts.add(c.attemptId);
      } else {
        violations.push(
          `flow key ${flowKey}: ${open.size} calls at once at ${new Date(e.at).toISOString()} (cap ${cap}; ${holding.length} of them of attempts no reaper settled), ` +
            `attempts ${[...open].map((c) => `${c.attemptId}${settledAttempts.has(c.attemptId) ? " (lease settled)" : ""}`).join(", ")}`,
        );
      }
    }
  }
  return { violations, excused, excusedAttempts: [...excusedAttempts], maxAtOnce };
}

/**
 * Whether a key's claims (their times, ms, in any order) kept within its token bucket: `limit` tokens, refilled
 * `limit` per `periodMs`, full at the start, one token per claim: the claim's own rule (flow_key_buckets),
 * replayed. The database keeps the bucket's time (tokens_at) and the attempts' claim times to the millisecond but
 * refills from its exact clock, so each claim may have had up to half a millisecond more refill than the rounded
 * times show: the replay grants that, and reports a claim only when even the most generous reading of the
 * clock leaves no token for it.
 */
export function keyRateExcess(times: readonly number[], limit: number, periodMs: number): { dispatches: number; over: number[] } {
  const perMs = limit / periodMs;
  const sorted = [...times].sort((a, b) => a - b);
  let tokens = limit;
  let last = sorted[0] ?? 0;
  const over: number[] = [];
  for (const t of sorted) {
    tokens = Math.min(limit, tokens + (t - last + 0.5) * perMs) - 1;
    last = t;
    if (tokens < -1e-9) {
      over.push(t);
      tokens = 0;
    }
  }
  return { dispatches: sorted.length, over };
}

/**
 * The most claims a token bucket of `limit` tokens refilled `limit` per `periodMs` allows in any closed window of
 * `windowMs`: what the bucket holds at the window's start (at most `limit`) plus what it refills during the window,
 * limit + r·windowMs with r = limit / periodMs; one period: 2 × limit (a full burst, then a period's refill).
 * Against times kept to the millisecond, the window's rounded ends may hide 1 ms more, and each of the window's n
 * claims may have refilled half a millisecond more (keyRateExcess), so n ≤ limit + r·(windowMs + 1 + n/2):
 * n ≤ (limit + r·(windowMs + 1)) / (1 − r/2), whose whole part is the bound (still 2 × limit for one period
 * at rates under a few hundred a second).
 */
export function tokenBucketWindowBound(limit: number, periodMs: number, windowMs: number): number {
  const perMs = limit / periodMs;
  return Math.floor((limit + perMs * (windowMs + 1)) / (1 - perMs / 2) + 1e-9);
}

/** The most of these times (ms) in one closed window [t, t + windowMs], and where that window starts. */
export function maxInWindow(times: readonly number[], windowMs: number): { count: number; at: number | null } {
  const sorted = [...times].sort((a, b) => a - b);
  let best = { count: 0, at: null as number | null };
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j]! - sorted[i]! > windowMs) i++;
    if (j - i + 1 > best.count) best = { count: j - i + 1, at: sorted[i]! };
  }
  return best;
}

/** A debounced job as the database holds it (times by the database clock, ms). */
export interface DebounceJobFacts {
  id: string;
  debounceKey: string | null;
  idempotencyKey: string | null;
  status: string;
  createdAt: number;
  /** Its attempts, in order: each one's ID, status and claim time. */
  attempts: { id: string; status: string; claimedAt: number }[];
}

/** A debounce key's rule, as the workload's creates asked for it. */
export interface DebounceRule {
  key: string;
  mode: "trailing" | "leading";
  periodMs: number;
  maxWaitMs?: number;
}

/** An acknowledged debounced create: its Idempotency-Key, the job its answer named, and the answer. */
export interface DebounceCreate {
  opKey: string;
  jobId: string;
  answer: DebounceAnswer;
}

export interface DebounceVerdict {
  violations: string[];
  /** Creates whose payload never ran where it had to (their job is missing, did not succeed, or ran another create's payload). */
  lost: Set<string>;
  /** The windows' jobs (one per window), the creates, and the creates folded or answered into a job another create opened. */
  windows: number;
  creates: number;
  folded: number;
  /** Trailing windows whose job became due at its maxWait, its creates still coming. */
  closedByMaxWait: number;
  /** Creates folded into a job after its first claim (each one a violation: a job claimed once never takes a fold). */
  foldedAfterClaim: number;
  /** The least time between a trailing window's job being claimed and the key's next window opening (may be negative within the tolerance). */
  minNextWindowAfterClaimMs: number | null;
}

/**
 * Debounced keys, one window at a time (docs/api.md "Debounce"), judged from each create's answer, the jobs and
 * their attempts, and what the downstream received. A key's creates are sent one at a time, so their order is the
 * order the API took them in. Millisecond rounding of the database's times is allowed for (1 ms).
 *
 * Every key, every window (the job a create opened, with the creates answered with it):
 * - each create's job exists, is of its debounce key, and the first create answered with it is the one that opened
 *   it (its Idempotency-Key is the job's); a key's creates go to its windows in order, never back to an earlier one;
 * - the job succeeded once (one successful attempt), and that attempt's request reached the downstream carrying
 *   the payload it had to: a trailing window's latest create's, a leading window's first create's (a leading job
 *   is never changed, so every one of its requests carries it); no other job's request had an effect under its
 *   Idempotency-Key.
 * Trailing (due periodMs after each create, never past the first create + maxWaitMs):
 * - every due time an answer showed lies in [job created + periodMs, job created + maxWaitMs], and the job's last
 *   claim (the run that succeeded) came no earlier than the latest of them;
 * - a key's next window opens only once the job of the one before was claimed (its creates fold while it waits)
 *   or that window reached its maxWait: a next job created more than `claimToleranceMs` before the previous one's
 *   claim, and before its maxWait, is two windows at once. The tolerance covers what the database's clock cannot
 *   order: a create's transaction takes its time (created_at) when it begins, and may begin before the claim
 *   whose commit it then waits for.
 * Leading (the first create's job due at once, later creates within periodMs answered with it):
 * - a key's next window opens periodMs or more after the one before it.
 * A job claimed once never takes a fold, also when it is back in `scheduled` to retry (its attempt failed or its
 * lease was settled) or was put back before its call: a create whose answered due time lies after the job's first
 * claim was folded into a dispatched job, a violation.
 */
export function checkDebounceWindows(args: {
  creates: readonly DebounceCreate[];
  jobs: readonly DebounceJobFacts[];
  deliveries: readonly Delivery[];
  /** Every attempt's job, for effects under a window's Idempotency-Key that came from some other job. */
  attemptJob: ReadonlyMap<string, string>;
  rules: readonly DebounceRule[];
  claimToleranceMs: number;
}): DebounceVerdict {
  const v: DebounceVerdict = { violations: [], lost: new Set(), windows: 0, creates: args.creates.length, folded: 0, closedByMaxWait: 0, foldedAfterClaim: 0, minNextWindowAfterClaimMs: null };
  const jobById = new Map(args.jobs.map((j) => [j.id, j]));
  const deliveriesOfAttempt = new Map<string, Delivery[]>();
  const deliveriesOfKey = new Map<string, Delivery[]>();
  for (const d of args.deliveries) {
    deliveriesOfAttempt.set(d.attemptId, [...(deliveriesOfAttempt.get(d.attemptId) ?? []), d]);
    deliveriesOfKey.set(d.key, [...(deliveriesOfKey.get(d.key) ?? []), d]);
  }
  const createsOfJob = new Map<string, DebounceCreate[]>();
  for (const c of args.creates) {
    const job = jobById.get(c.jobId);
    if (!job) {
      v.lost.add(c.opKey);
      v.violations.push(`debounce ${c.answer.key}: create ${c.opKey} was answered with job ${c.jobId}, which does not exist`);
      continue;
    }
    if (job.debounceKey !== c.answer.key) {
      v.lost.add(c.opKey);
      v.violations.push(`debounce ${c.answer.key}: create ${c.opKey} was answered with job ${c.jobId} of debounce key ${job.debounceKey ?? "(none)"}`);
      continue;
    }
    createsOfJob.set(job.id, [...(createsOfJob.get(job.id) ?? []), c]);
  }

  for (const rule of args.rules) {
    const windows = args.jobs
      .filter((j) => j.debounceKey === rule.key && createsOfJob.has(j.id))
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    const where = (j: DebounceJobFacts) => `debounce ${rule.key} (${rule.mode}): job ${j.id}`;
    let previous: { job: DebounceJobFacts; last: DebounceCreate } | null = null;
    for (const job of windows) {
      v.windows++;
      const creates = createsOfJob.get(job.id)!.sort((a, b) => a.answer.seq - b.answer.seq);
      v.folded += creates.length - 1;
      const first = creates[0]!;
      const last = creates.at(-1)!;
      const owed = rule.mode === "trailing" ? last : first;
      const lose = (c: DebounceCreate, why: string) => {
        v.lost.add(c.opKey);
        v.violations.push(`${where(job)}: ${why}`);
      };
      if (job.idempotencyKey !== first.opKey) {
        v.violations.push(`${where(job)}: opened by ${job.idempotencyKey ?? "a create without a key"}, yet ${first.opKey}, an earlier create, was answered with it`);
      }
      if (previous && first.answer.seq <= previous.last.answer.seq) {
        v.violations.push(
          `${where(job)}: create ${previous.last.opKey} (#${previous.last.answer.seq}) went to the window before this one (${previous.job.id}) after create ${first.opKey} (#${first.answer.seq}) had gone to this one`,
        );
      }

      // Ran once, with the payload it owed.
      const succeeded = job.attempts.filter((a) => a.status === "succeeded");
      if (job.status !== "succeeded" || succeeded.length !== 1) {
        for (const c of creates) v.lost.add(c.opKey);
        v.violations.push(`${where(job)}: ended ${job.status} with ${succeeded.length} successful attempts (one run per window expected; ${creates.length} creates went to it)`);
      } else {
        const ran = (deliveriesOfAttempt.get(succeeded[0]!.id) ?? []).filter((d) => d.status === 200);
        if (ran.length === 0) lose(owed, `succeeded without a request at the downstream`);
        else if (ran.some((d) => d.path !== owed.answer.path)) {
          lose(owed, `ran ${ran.find((d) => d.path !== owed.answer.path)!.path}, not the payload of ${owed.opKey} (${rule.mode === "trailing" ? "the window's latest create" : "the create that opened it"})`);
        }
      }
      const paths = new Set(creates.map((c) => c.answer.path));
      for (const a of job.attempts) {
        for (const d of deliveriesOfAttempt.get(a.id) ?? []) {
          if (rule.mode === "leading" ? d.path !== first.answer.path : !paths.has(d.path)) {
            v.violations.push(`${where(job)}: attempt ${a.id} sent ${d.path}, which no create of this window ${rule.mode === "leading" ? "opened it with" : "asked for"}`);
          }
        }
      }
      for (const d of deliveriesOfKey.get(job.idempotencyKey ?? "") ?? []) {
        const of = args.attemptJob.get(d.attemptId);
        if (d.status === 200 && of !== job.id) v.violations.push(`${where(job)}: an effect under its Idempotency-Key came from ${of ? `job ${of}` : `an unknown attempt ${d.attemptId}`}`);
      }

      const claims = job.attempts.map((a) => a.claimedAt);
      const firstClaim = claims.length ? Math.min(...claims) : null;
      const lastClaim = claims.length ? Math.max(...claims) : null;
      if (rule.mode === "trailing") {
        const maxWaitMs = rule.maxWaitMs ?? Infinity;
        const dues = creates.flatMap((c) => (c.answer.dueAt === null ? [] : [{ c, dueAt: c.answer.dueAt }]));
        for (const { c, dueAt } of dues) {
          if (dueAt < job.createdAt + rule.periodMs - 1 || dueAt > job.createdAt + maxWaitMs + 1) {
            v.violations.push(`${where(job)}: create ${c.opKey} made it due ${dueAt - job.createdAt} ms after the window opened (period ${rule.periodMs} ms, maxWait ${maxWaitMs} ms)`);
          }
          if (firstClaim !== null && dueAt > firstClaim + 1) {
            v.foldedAfterClaim++;
            v.violations.push(`${where(job)}: create ${c.opKey} was folded into it ${dueAt - firstClaim} ms after its first claim (a job claimed once takes no fold)`);
          }
        }
        const latestDue = Math.max(...dues.map((d) => d.dueAt));
        if (dues.length && lastClaim !== null && lastClaim < latestDue - 1) {
          v.violations.push(`${where(job)}: claimed ${latestDue - lastClaim} ms before the due time its latest create gave it`);
        }
        if (dues.some((d) => d.dueAt >= job.createdAt + maxWaitMs - 1)) v.closedByMaxWait++;
        if (previous) {
          const prevClaim = previous.job.attempts.length ? Math.min(...previous.job.attempts.map((a) => a.claimedAt)) : null;
          const beforeMaxWait = job.createdAt < previous.job.createdAt + maxWaitMs - 1;
          if (prevClaim !== null && beforeMaxWait) {
            const after = job.createdAt - prevClaim;
            v.minNextWindowAfterClaimMs = Math.min(v.minNextWindowAfterClaimMs ?? after, after);
          }
          if (beforeMaxWait && (prevClaim === null || job.createdAt < prevClaim - args.claimToleranceMs)) {
            v.violations.push(
              `${where(job)}: opened ${prevClaim === null ? "while the window before it, whose job never ran, was open" : `${prevClaim - job.createdAt} ms before the job of the window before it (${previous.job.id}) was claimed`}, ` +
                `${job.createdAt - previous.job.createdAt} ms into that window (maxWait ${maxWaitMs} ms): two windows at once`,
            );
          }
        }
      } else if (previous && job.createdAt < previous.job.createdAt + rule.periodMs - 1) {
        v.violations.push(`${where(job)}: opened ${job.createdAt - previous.job.createdAt} ms after the window before it (${previous.job.id}), within its period of ${rule.periodMs} ms`);
      }
      previous = { job, last };
    }
  }
  return v;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/**
 * The invariants, checked against Postgres and what the downstream actually received:
 * every acknowledged job exists and ended as its kind must; each succeeded job had exactly one effect
 * (raw duplicate deliveries counted, never a second effect, never two jobs for one client request);
 * a job cancelled before it started was never delivered; no job has two successful attempts or a
 * fencing token behind its attempts; the outbox is published; nothing due is left undispatched; the
 * quiet tenant's lag stayed bounded while the noisy tenant burst.
 */
export async function checkInvariants(args: {
  pool: pg.Pool;
  sink: ChaosSink;
  ops: Op[];
  phases: PhaseRun[];
  quietLagBoundMs: number;
  /** The start-lag bound of a single-fault phase: faultMs + 2 × leaseTtlMs + startLagSlackMs. */
  leaseTtlMs: number;
  startLagSlackMs: number;
  /** Dependencies the run takes down: their breaker holds jobs at the claim, so their lag is not judged. */
  heldDependencies: string[];
  /** The DST transition the injected database clock crossed (S14), if the run had one. */
  dstTransition?: { at: Date; zone: string; scheduleEverySeconds: number } | null;
}): Promise<Verdict> {
  const { pool, sink, ops } = args;
  const violations: string[] = [];
  const { rows: jobs } = await pool.query<{ id: string; status: string; idempotency_key: string | null; schedule_id: string | null; fencing_token: string }>(
    `SELECT id, status, idempotency_key, schedule_id, fencing_token::text FROM history.jobs_all`,
  );
  const { rows: attempts } = await pool.query<{ id: string; job_id: string; status: string; fencing_token: string }>(`SELECT id, job_id, status, fencing_token::text FROM history.attempts_all`);
  const jobById = new Map(jobs.map((j) => [j.id, j]));
  const jobsByKey = new Map<string, typeof jobs>();
  for (const j of jobs) if (j.idempotency_key) jobsByKey.set(j.idempotency_key, [...(jobsByKey.get(j.idempotency_key) ?? []), j]);
  const attemptJob = new Map(attempts.map((a) => [a.id, a.job_id]));
  const attemptsByJob = new Map<string, typeof attempts>();
  for (const a of attempts) attemptsByJob.set(a.job_id, [...(attemptsByJob.get(a.job_id) ?? []), a]);
  const deliveriesByKey = new Map<string, ChaosSink["deliveries"]>();
  for (const d of sink.deliveries) deliveriesByKey.set(d.key, [...(deliveriesByKey.get(d.key) ?? []), d]);

  /** Jobs whose 2xx deliveries came from more than one job for one key: two effects for one request. */
  const effectJobs = (key: string) => new Set((deliveriesByKey.get(key) ?? []).filter((d) => d.status === 200).map((d) => attemptJob.get(d.attemptId) ?? `unknown:${d.attemptId}`));
  const rawDuplicates = (key: string) => Math.max(0, (deliveriesByKey.get(key) ?? []).filter((d) => d.status === 200).length - 1);

  const rows = new Map<string, PhaseRow>(
    args.phases.map((p) => [p.name, { phase: p.name, scenarios: p.scenarios, faults: p.faults, jobs: 0, lost: 0, duplicateEffects: 0, rawDuplicateDeliveries: 0, quietMaxLagMs: null, quietP99LagMs: null, maxStartLagMs: null, startLagBoundMs: p.faultMs === null ? null : p.faultMs + 2 * args.leaseTtlMs + args.startLagSlackMs }]),
  );
  const quietLags = new Map<string, number[]>();
  const quietSlowest = new Map<string, { op: Op; lag: number }>();

  for (const op of ops) {
    const row = rows.get(op.phase);
    if (!row) continue;
    const found = jobsByKey.get(op.key) ?? [];
    if (found.length > 1) {
      row.duplicateEffects++;
      violations.push(`${op.key}: ${found.length} jobs for one Idempotency-Key`);
    }
    if (!op.jobId) {
      // Never acknowledged (the run ended mid-outage): it may or may not exist, but at most once (above).
      continue;
    }
    // A debounced create may be folded into a job another create opened: judged per window below.
    if (op.kind === "debounced") continue;
    row.jobs++;
    const job = jobById.get(op.jobId);
    const lose = (why: string) => {
      row.lost++;
      violations.push(`${op.key} (${op.kind}, job ${op.jobId}): ${why}`);
    };
    if (!job) {
      lose("acknowledged but not in the database");
      continue;
    }
    const effects = effectJobs(op.key);
    row.rawDuplicateDeliveries += rawDuplicates(op.key);
    if (effects.size > 1) {
      row.duplicateEffects++;
      violations.push(`${op.key}: effects from ${effects.size} different jobs`);
    }
    const succeeded = (attemptsByJob.get(job.id) ?? []).filter((a) => a.status === "succeeded").length;
    if (succeeded > 1) {
      row.duplicateEffects++;
      violations.push(`${op.key}: ${succeeded} successful attempts recorded`);
    }
    const expect = (statuses: string[]) => {
      if (!statuses.includes(job.status)) lose(`ended ${job.status}, expected ${statuses.join(" or ")}`);
    };
    switch (op.kind) {
      case "fail":
        expect(["dead"]);
        break;
      case "cancel":
        if (op.cancel === "cancelled") {
          expect(["cancelled"]);
          if ((deliveriesByKey.get(op.key) ?? []).length > 0) lose("cancelled before it started, yet delivered");
        } else if (op.cancel === "cancelled_after_attempts") {
          expect(["cancelled"]);
          // Each attempt that had started sends at most one request; none may start after the answer.
          const delivered = (deliveriesByKey.get(op.key) ?? []).length;
          if (delivered > (op.cancelAttemptsStarted ?? 0)) lose(`cancelled after ${op.cancelAttemptsStarted} attempts, yet delivered ${delivered} times`);
        } else if (op.cancel === "requested") expect(["cancelled", "succeeded"]);
        else expect(["succeeded", "cancelled"]);
        break;
      default:
        expect(["succeeded"]);
    }
    if (job.status === "succeeded" && effects.size === 0) lose("succeeded without any effect at the downstream");
    if (op.kind === "quiet") {
      const first = (deliveriesByKey.get(op.key) ?? [])[0];
      if (first) {
        const lag = first.at - op.createdAt;
        quietLags.set(op.phase, [...(quietLags.get(op.phase) ?? []), lag]);
        if (lag > (quietSlowest.get(op.phase)?.lag ?? -1)) quietSlowest.set(op.phase, { op, lag });
      }
    }
  }

  for (const [phase, lags] of quietLags) {
    const row = rows.get(phase)!;
    row.quietMaxLagMs = Math.max(...lags);
    row.quietP99LagMs = percentile(lags, 99);
    const slowest = quietSlowest.get(phase);
    if (slowest) row.quietSlowest = await explainLag(pool, slowest.op, slowest.lag, deliveriesByKey.get(slowest.op.key)![0]!.at);
  }
  // Recovery: after one fault, whatever fell due during the phase starts within the fault's
  // duration plus two lease TTLs (one for a dead holder's lease to lapse, one for its successor) + slack.
  const delayOf = new Map(ops.filter((o) => o.jobId && o.delayMs !== undefined).map((o) => [o.jobId!, o.delayMs!]));
  // A job due shortly before the next phase's fault may still be waiting, within its own phase's bound, when
  // that fault hits: it is then held to the fault's recovery, counted from the fault (due time + own bound
  // reaching past the fault's start), whichever of the two allows more.
  const boundOf = (p: PhaseRun) => rows.get(p.name)!.startLagBoundMs;
  const worst = new Map<string, { lagMs: number; jobId: string; attempt: number }>();
  const over = new Map<string, { lagMs: number; jobId: string; attempt: number; boundMs: number; why: string }>();
  for (const l of await measureStartLags({ pool, delayOf, heldDependencies: args.heldDependencies })) {
    const i = args.phases.findIndex((p) => l.dueAtHostMs >= p.startedAt && l.dueAtHostMs < p.endedAt);
    if (i < 0) continue;
    const phase = args.phases[i]!;
    if (l.lagMs > (worst.get(phase.name)?.lagMs ?? -1)) worst.set(phase.name, l);
    const own = boundOf(phase);
    if (own === null) continue;
    let boundMs = own;
    let why = `fault + 2 lease TTLs + ${args.startLagSlackMs} ms`;
    const next = args.phases[i + 1];
    const nextBound = next ? boundOf(next) : null; // null: no single fault there, not judged
    if (next && nextBound !== null) {
      const faultAt = next.faultAt ?? next.startedAt;
      if (faultAt - l.dueAtHostMs < own && faultAt - l.dueAtHostMs + nextBound > boundMs) {
        boundMs = Math.round(faultAt - l.dueAtHostMs + nextBound);
        why = `due ${Math.round(faultAt - l.dueAtHostMs)} ms before "${next.name}"'s fault, plus that phase's bound of ${nextBound} ms`;
      }
    }
    // Per phase, the attempt furthest over its own bound.
    const furthest = over.get(phase.name);
    if (l.lagMs > boundMs && (!furthest || l.lagMs - boundMs > furthest.lagMs - furthest.boundMs)) over.set(phase.name, { ...l, boundMs, why });
  }
  for (const [name, w] of worst) {
    const row = rows.get(name)!;
    row.maxStartLagMs = w.lagMs;
    row.startLagSlowest = `job ${w.jobId} attempt ${w.attempt}: started ${w.lagMs} ms after it was due`;
  }
  for (const [name, o] of over) {
    violations.push(`"${name}": an attempt started ${o.lagMs} ms after it was due (bound ${o.boundMs} ms: ${o.why}); job ${o.jobId} attempt ${o.attempt}`);
  }

  const burst = rows.get("noisy tenant burst");
  if (burst?.quietP99LagMs != null && burst.quietP99LagMs > args.quietLagBoundMs) {
    violations.push(`quiet tenant p99 lag during the noisy burst was ${burst.quietP99LagMs} ms (bound ${args.quietLagBoundMs} ms)`);
  }

  // Schedule occurrences: one job each (the unique constraint), each succeeded one delivered.
  const occurrenceJobs = jobs.filter((j) => j.schedule_id);
  for (const j of occurrenceJobs) {
    if (j.status !== "succeeded") violations.push(`schedule occurrence ${j.idempotency_key} ended ${j.status}`);
    else if (effectJobs(j.idempotency_key ?? "").size !== 1) violations.push(`schedule occurrence ${j.idempotency_key}: ${effectJobs(j.idempotency_key ?? "").size} effects`);
  }

  // S14: across the transition, the schedule's instants are exactly its period apart (none lost in the
  // spring-forward gap, none doubled), and the run really crossed it.
  if (args.dstTransition) {
    const { at, zone, scheduleEverySeconds } = args.dstTransition;
    const { rows: occ } = await pool.query<{ ms: string }>(
      `SELECT (extract(epoch FROM occurrence_at) * 1000)::bigint::text AS ms FROM history.jobs_all WHERE schedule_id IS NOT NULL ORDER BY occurrence_at`,
    );
    const times = occ.map((o) => Number(o.ms));
    const row: PhaseRow = {
      phase: `DST spring-forward in ${zone} under an injected clock`,
      scenarios: "S14",
      faults: 1,
      jobs: times.filter((t) => Math.abs(t - at.getTime()) <= 60_000).length,
      lost: 0,
      duplicateEffects: 0,
      rawDuplicateDeliveries: 0,
      quietMaxLagMs: null,
      quietP99LagMs: null,
      maxStartLagMs: null,
      startLagBoundMs: null,
    };
    for (let i = 1; i < times.length; i++) {
      const gap = times[i]! - times[i - 1]!;
      if (gap > scheduleEverySeconds * 1_000) {
        row.lost += gap / (scheduleEverySeconds * 1_000) - 1;
        const after = await pool.query<{ metadata: unknown; created_at: Date }>(`SELECT metadata, created_at FROM history.jobs_all WHERE schedule_id IS NOT NULL AND occurrence_at = $1`, [new Date(times[i]!)]);
        violations.push(
          `schedule: no occurrence between ${new Date(times[i - 1]!).toISOString()} and ${new Date(times[i]!).toISOString()} ` +
            `(the next one was created at ${after.rows[0]?.created_at.toISOString()} with metadata ${JSON.stringify(after.rows[0]?.metadata)})`,
        );
      } else if (gap < scheduleEverySeconds * 1_000) {
        row.duplicateEffects++;
        violations.push(`schedule: occurrences ${gap} ms apart at ${new Date(times[i]!).toISOString()}`);
      }
    }
    if (!(times[0]! < at.getTime() && times.at(-1)! > at.getTime())) {
      violations.push(`schedule: the run did not cross the DST transition at ${at.toISOString()} (occurrences ${times.length ? `${new Date(times[0]!).toISOString()} to ${new Date(times.at(-1)!).toISOString()}` : "none"})`);
    }
    rows.set(row.phase, row);
  }

  // Fencing: a job's token is its newest attempt's, and attempts' tokens are distinct.
  for (const j of jobs) {
    const tokens = (attemptsByJob.get(j.id) ?? []).map((a) => Number(a.fencing_token));
    if (tokens.length && Math.max(...tokens) !== Number(j.fencing_token)) violations.push(`job ${j.id}: fencing token ${j.fencing_token} is not its newest attempt's`);
    if (new Set(tokens).size !== tokens.length) violations.push(`job ${j.id}: two attempts with one fencing token`);
  }

  // Flow keys: no key over its cap at the downstream (but beside settled leases), none over its rate at the claim.
  const { rows: settled } = await pool.query<{ id: string; capped: boolean }>(
    `SELECT a.id, q.name = $1 AS capped
       FROM history.attempts_all a JOIN history.jobs_all j ON j.id = a.job_id JOIN queues q ON q.id = j.queue_id
      WHERE a.status = 'lease_expired' OR a.outcome = 'lease_expired'`,
    [KEYED_QUEUES.capped.name],
  );
  const caps = keyCapOverlaps(sink.keyedCalls, KEYED_QUEUES.capped.perKeyConcurrency, new Set(settled.map((a) => a.id)));
  violations.push(...caps.violations);
  const { rows: ratedDispatches } = await pool.query<{ flow_key: string; at: string }>(
    `SELECT j.flow_key, (extract(epoch FROM a.claimed_at) * 1000)::bigint::text AS at
       FROM history.attempts_all a JOIN history.jobs_all j ON j.id = a.job_id
       JOIN queues q ON q.id = j.queue_id JOIN tenants t ON t.id = q.tenant_id
      WHERE t.name = 'keyed' AND q.name = $1`,
    [KEYED_QUEUES.rated.name],
  );
  const ratedByKey = new Map<string, number[]>();
  for (const r of ratedDispatches) ratedByKey.set(r.flow_key, [...(ratedByKey.get(r.flow_key) ?? []), Number(r.at)]);
  const { limit, periodMs } = KEYED_QUEUES.rated.perKeyRate;
  const windowBound = tokenBucketWindowBound(limit, periodMs, periodMs);
  let keyRateOver = 0;
  let keyRateMaxInPeriod = 0;
  let keyRateKeysOverWindow = 0;
  for (const [flowKey, times] of ratedByKey) {
    const { over } = keyRateExcess(times, limit, periodMs);
    keyRateOver += over.length;
    for (const t of over.slice(0, 5)) violations.push(`flow key ${flowKey}: claimed with no token left in its bucket (${limit} per ${periodMs} ms) at ${new Date(t).toISOString()}`);
    const most = maxInWindow(times, periodMs);
    keyRateMaxInPeriod = Math.max(keyRateMaxInPeriod, most.count);
    if (most.count > windowBound) {
      keyRateKeysOverWindow++;
      violations.push(`flow key ${flowKey}: ${most.count} claims within ${periodMs} ms from ${new Date(most.at!).toISOString()} (a bucket of ${limit} per ${periodMs} ms allows ${windowBound})`);
    }
  }

  // Debounce: each window ran once, with the payload it owed (checkDebounceWindows).
  const { rows: debouncedRows } = await pool.query<{ id: string; debounce_key: string; idempotency_key: string | null; status: string; created_ms: string; attempts: { id: string; status: string; claimed_ms: number }[] }>(
    `SELECT j.id, j.debounce_key, j.idempotency_key, j.status, (extract(epoch FROM j.created_at) * 1000)::bigint::text AS created_ms,
            coalesce((SELECT json_agg(json_build_object('id', a.id, 'status', a.status, 'claimed_ms', (extract(epoch FROM a.claimed_at) * 1000)::bigint) ORDER BY a.number)
                        FROM history.attempts_all a WHERE a.job_id = j.id), '[]') AS attempts
       FROM history.jobs_all j WHERE j.debounce_key IS NOT NULL`,
  );
  const debounceJobs: DebounceJobFacts[] = debouncedRows.map((r) => ({
    id: r.id,
    debounceKey: r.debounce_key,
    idempotencyKey: r.idempotency_key,
    status: r.status,
    createdAt: Number(r.created_ms),
    attempts: r.attempts.map((a) => ({ id: a.id, status: a.status, claimedAt: Number(a.claimed_ms) })),
  }));
  const debounceOps = ops.filter((o): o is Op & { jobId: string; debounce: DebounceAnswer } => o.kind === "debounced" && o.jobId !== null && o.debounce !== undefined);
  const debounce = checkDebounceWindows({
    creates: debounceOps.map((o) => ({ opKey: o.key, jobId: o.jobId, answer: o.debounce })),
    jobs: debounceJobs,
    deliveries: sink.deliveries,
    attemptJob,
    rules: KEYED_QUEUES.debounced.keys,
    claimToleranceMs: DEBOUNCE_CLAIM_TOLERANCE_MS,
  });
  violations.push(...debounce.violations);
  const debounceJobById = new Map(debounceJobs.map((j) => [j.id, j]));
  for (const o of debounceOps) {
    const row = rows.get(o.phase);
    if (!row) continue;
    if (debounce.lost.has(o.key)) row.lost++;
    const job = debounceJobById.get(o.jobId);
    if (job?.idempotencyKey === o.key) {
      // The create that opened the window counts as its job, with the window's raw duplicate deliveries.
      row.jobs++;
      const ids = new Set(job.attempts.map((a) => a.id));
      row.rawDuplicateDeliveries += Math.max(0, sink.deliveries.filter((d) => ids.has(d.attemptId) && d.status === 200).length - 1);
    }
  }

  const one = async (q: string) => Number((await pool.query<{ n: string }>(q)).rows[0]!.n);
  // Tenants whose pending-job quota count (the sum the create path reads: its rows under the tenant's shard) is not
  // their live jobs.
  const { rows: liveCountsOff } = await pool.query<{ tenant_id: string; counted: string; live: string }>(
    `SELECT coalesce(c.tenant_id, l.tenant_id) AS tenant_id, coalesce(c.n, 0) AS counted, coalesce(l.n, 0) AS live FROM (
         SELECT c.tenant_id, sum(c.n) AS n FROM tenant_live_job_counts c JOIN tenants t ON t.id = c.tenant_id AND t.shard = c.shard GROUP BY c.tenant_id
       ) c
       FULL JOIN (SELECT tenant_id, count(*) AS n FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running') GROUP BY tenant_id) l
         ON l.tenant_id = c.tenant_id
      WHERE coalesce(c.n, 0) <> coalesce(l.n, 0)`,
  );
  const facts = {
    unpublishedOutboxRows: await one(`SELECT count(*) AS n FROM outbox WHERE published_at IS NULL`),
    dueButUndispatched: await one(`SELECT count(*) AS n FROM jobs WHERE status = 'scheduled' AND due_at < now() - interval '3 seconds'`),
    stuckInFlight: await one(`SELECT count(*) AS n FROM jobs WHERE status IN ('dispatched', 'running')`),
    staleSchedulerWritesRefused: await one(`SELECT coalesce(sum(stale_writes_rejected), 0) AS n FROM shard_leases`),
    lateCompletionsRefused: await one(`SELECT coalesce(sum(late_completions), 0) AS n FROM history.attempts_all`),
    jobsMovedToHistory: await one(`SELECT count(*) AS n FROM history.jobs`),
    shardEpochMax: await one(`SELECT coalesce(max(epoch), 0) AS n FROM shard_leases`),
    scheduleOccurrences: occurrenceJobs.length,
    deliveries: sink.deliveries.length,
    webhooks: sink.webhooks.length,
    replays: await one(`SELECT count(*) AS n FROM dlq_replays`),
    replaysNotCompleted: await one(`SELECT count(*) AS n FROM dlq_replays WHERE status <> 'completed'`),
    keyedCalls: sink.keyedCalls.length,
    keyCapMaxAtOnce: caps.maxAtOnce,
    keyCapOverlapsExcused: caps.excused,
    keyedAttemptsSettledByReaper: settled.filter((a) => a.capped).length,
    keyRateDispatches: ratedDispatches.length,
    keyRateOver,
    keyRateMaxInPeriod,
    debounceCreates: debounce.creates,
    debounceWindows: debounce.windows,
    tenantsWithLiveCountOff: liveCountsOff.length,
  };
  const { rows: unfinishedReplays } = await pool.query<{ id: string; status: string; status_reason: string | null; total: number; released: number; succeeded: number; failed: number }>(
    `SELECT id, status, status_reason, total, released, succeeded, failed FROM dlq_replays WHERE status <> 'completed'`,
  );
  if (facts.unpublishedOutboxRows > 0) violations.push(`${facts.unpublishedOutboxRows} outbox rows never published`);
  if (facts.dueButUndispatched > 0) violations.push(`${facts.dueButUndispatched} due jobs left undispatched`);
  if (facts.stuckInFlight > 0) violations.push(`${facts.stuckInFlight} jobs still dispatched or running after the drain`);
  for (const t of liveCountsOff.slice(0, 5)) violations.push(`tenant ${t.tenant_id}: pending-job count ${t.counted}, live jobs ${t.live}`);
  for (const r of unfinishedReplays) {
    violations.push(`DLQ replay ${r.id} ended ${r.status} (${r.released}/${r.total} released, ${r.succeeded} succeeded, ${r.failed} failed)${r.status_reason ? `: ${r.status_reason}` : ""}`);
  }

  const list = [...rows.values()];
  const sum = (k: "jobs" | "lost" | "duplicateEffects" | "rawDuplicateDeliveries" | "faults") => list.reduce((s, r) => s + r[k], 0);
  return {
    rows: list,
    totals: { jobs: sum("jobs") + occurrenceJobs.length, lost: sum("lost"), duplicateEffects: sum("duplicateEffects"), rawDuplicateDeliveries: sum("rawDuplicateDeliveries"), faults: sum("faults") },
    violations,
    facts,
    flowKeys: {
      capped: {
        cap: KEYED_QUEUES.capped.perKeyConcurrency,
        keys: new Set(sink.keyedCalls.map((c) => c.flowKey)).size,
        calls: sink.keyedCalls.length,
        maxAtOnce: caps.maxAtOnce,
        settledLeases: facts.keyedAttemptsSettledByReaper,
        overlapsExcused: caps.excused,
        excusedAttempts: caps.excusedAttempts,
        violations: caps.violations.length,
      },
      rated: { limit, periodMs, keys: ratedByKey.size, claims: ratedDispatches.length, maxInPeriod: keyRateMaxInPeriod, periodBound: windowBound, overBucket: keyRateOver, keysOverPeriodBound: keyRateKeysOverWindow },
      debounce: {
        windows: debounce.windows,
        creates: debounce.creates,
        folded: debounce.folded,
        closedByMaxWait: debounce.closedByMaxWait,
        foldedAfterClaim: debounce.foldedAfterClaim,
        minNextWindowAfterClaimMs: debounce.minNextWindowAfterClaimMs,
        lost: debounce.lost.size,
        violations: debounce.violations.length,
      },
    },
  };
}
