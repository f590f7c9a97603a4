import type pg from "pg";
import type { ChaosSink, KeyedCall } from "./sink.js";
import { measureStartLags } from "./start-lag.js";
import { KEYED_QUEUES, type Op } from "./workload.js";

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
}

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
 * Where a key had more calls open at once than its cap, from the downstream's record of each call. An
 * overlap is excused when one of the open calls belongs to an attempt whose lease the reaper settled (its
 * worker froze and woke after its slot was given to the next attempt: the one documented way past a cap).
 */
export function keyCapOverlaps(calls: readonly KeyedCall[], cap: number, settledAttempts: ReadonlySet<string>): { violations: string[]; excused: number } {
  const violations: string[] = [];
  let excused = 0;
  const byKey = new Map<string, KeyedCall[]>();
  for (const c of calls) byKey.set(c.flowKey, [...(byKey.get(c.flowKey) ?? []), c]);
  for (const [flowKey, keyCalls] of byKey) {
    // Ends before starts at the same instant: a call answered at t and one arriving at t never overlap.
    const events = keyCalls.flatMap((c) => [
      { at: c.start, open: true, call: c },
      { at: c.end, open: false, call: c },
    ]).sort((a, b) => a.at - b.at || Number(a.open) - Number(b.open));
    const open = new Set<KeyedCall>();
    for (const e of events) {
      if (!e.open) {
        open.delete(e.call);
        continue;
      }
      open.add(e.call);
      if (open.size <= cap) continue;
      if ([...open].some((c) => settledAttempts.has(c.attemptId))) excused++;
      else violations.push(`flow key ${flowKey}: ${open.size} calls at once at ${new Date(e.at).toISOString()} (cap ${cap}), attempts ${[...open].map((c) => c.attemptId).join(", ")}`);
    }
  }
  return { violations, excused };
}

/**
 * Whether a key's dispatches (their times, ms, in any order) kept within a token bucket of `limit` tokens that
 * refills `limit` per `periodMs`, full at the start: the claim's own rule, replayed. `slack` tokens absorb the
 * stored times' rounding to the millisecond.
 */
export function keyRateExcess(times: readonly number[], limit: number, periodMs: number, slack = 0.05): { dispatches: number; over: number[] } {
  const sorted = [...times].sort((a, b) => a - b);
  let tokens = limit;
  let last = sorted[0] ?? 0;
  const over: number[] = [];
  for (const t of sorted) {
    tokens = Math.min(limit, tokens + ((t - last) * limit) / periodMs);
    last = t;
    tokens -= 1;
    if (tokens < -slack) {
      over.push(t);
      tokens = 0;
    }
  }
  return { dispatches: sorted.length, over };
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

  // Flow keys: no key over its cap at the downstream (but for settled leases), none over its rate at dispatch.
  const { rows: settled } = await pool.query<{ id: string }>(`SELECT id FROM history.attempts_all WHERE status = 'lease_expired'`);
  const caps = keyCapOverlaps(sink.keyedCalls, KEYED_QUEUES.capped.perKeyConcurrency, new Set(settled.map((a) => a.id)));
  violations.push(...caps.violations);
  const { rows: ratedDispatches } = await pool.query<{ flow_key: string; at: number }>(
    `SELECT j.flow_key, extract(epoch FROM a.claimed_at) * 1000 AS at
       FROM history.attempts_all a JOIN history.jobs_all j ON j.id = a.job_id
       JOIN queues q ON q.id = j.queue_id JOIN tenants t ON t.id = q.tenant_id
      WHERE t.name = 'keyed' AND q.name = $1`,
    [KEYED_QUEUES.rated.name],
  );
  const ratedByKey = new Map<string, number[]>();
  for (const r of ratedDispatches) ratedByKey.set(r.flow_key, [...(ratedByKey.get(r.flow_key) ?? []), Number(r.at)]);
  let keyRateOver = 0;
  for (const [flowKey, times] of ratedByKey) {
    const { over } = keyRateExcess(times, KEYED_QUEUES.rated.perKeyRate.limit, KEYED_QUEUES.rated.perKeyRate.periodMs);
    keyRateOver += over.length;
    for (const t of over.slice(0, 5)) violations.push(`flow key ${flowKey}: dispatched over its rate at ${new Date(t).toISOString()}`);
  }

  const one = async (q: string) => Number((await pool.query<{ n: string }>(q)).rows[0]!.n);
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
    keyCapOverlapsExcused: caps.excused,
    keyRateDispatches: ratedDispatches.length,
    keyRateOver,
  };
  const { rows: unfinishedReplays } = await pool.query<{ id: string; status: string; status_reason: string | null; total: number; released: number; succeeded: number; failed: number }>(
    `SELECT id, status, status_reason, total, released, succeeded, failed FROM dlq_replays WHERE status <> 'completed'`,
  );
  if (facts.unpublishedOutboxRows > 0) violations.push(`${facts.unpublishedOutboxRows} outbox rows never published`);
  if (facts.dueButUndispatched > 0) violations.push(`${facts.dueButUndispatched} due jobs left undispatched`);
  if (facts.stuckInFlight > 0) violations.push(`${facts.stuckInFlight} jobs still dispatched or running after the drain`);
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
  };
}
