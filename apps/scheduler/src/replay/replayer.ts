import type pg from "pg";
import { judgeFailureRate, planReleases } from "@tick/core";
import { sql } from "@tick/db";
import type { Logger } from "@tick/runtime";
import { withShardFence } from "../leases/shard-fence.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";

export interface ReplayerConfig {
  holder: string;
  /** Released jobs are given due times up to this far ahead (one slot every 1/rate seconds). */
  horizonMs: number;
  /** Most jobs one replay releases per round. */
  batch: number;
  /** Released jobs still without an outcome after this many seconds' worth of the rate stop further releases. */
  inFlightSeconds: number;
}

export interface ReplayRound {
  /** False when the shard lease was no longer ours: nothing was released. */
  leaseHeld: boolean;
  released: number;
  /** Where each replay of the shard still open stands after the round (the replay metrics). */
  progress: ReplayProgress[];
}

/** A replay's progress after a round, for the metrics (tick_replay_jobs and kin). */
export interface ReplayProgress {
  tenantId: string;
  status: string;
  pending: number;
  inFlight: number;
  succeeded: number;
  failed: number;
  skipped: number;
  /** Failed share of the latest judged first attempts (a running replay's), or null before enough are in. */
  failureRate: number | null;
}

type StepResult = { released: number; firstDueAt: Date | null; event?: string; reason?: string; progress?: ReplayProgress; settled?: { succeeded: number; failed: number; skipped: number } };

/**
 * Runs the DLQ replays of the shards this scheduler holds (S17), each round inside the shard-fenced
 * transaction: tallies what became of released jobs, pauses a replay whose jobs keep failing (with the
 * reason), completes a finished one, and releases the next jobs of a running one, highest priority
 * first, each with its own due slot so attempts start evenly at the replay's rate. Released jobs then
 * go through normal dispatch (fairness, the global rate, breakers) like any other due job.
 */
export class Replayer {
  constructor(
    private readonly pool: pg.Pool,
    private readonly config: ReplayerConfig,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    private readonly noteDue: (shard: number, tenantId: string, dueAtMs: number) => Promise<void>,
    /** Per tenant, the dependencies whose circuit breaker is open now (shared with dispatch, read from Redis). */
    private readonly openDependencies: () => Promise<Map<string, string[]>> = async () => new Map(),
  ) {}

  async runShard(lease: HeldLease): Promise<ReplayRound> {
    let released = 0;
    const progress: ReplayProgress[] = [];
    const replays = await sql.openReplaysOfShard(this.pool, lease.shard);
    if (replays.length === 0) return { leaseHeld: true, released, progress };
    // Breakers live in Redis: when it is down, replays go on judged by their failure rate alone.
    const open = replays.some((r) => r.status === "running") ? await this.openDependencies().catch(() => new Map<string, string[]>()) : new Map<string, string[]>();
    for (const replay of replays) {
      const result = await withShardFence(
        this.pool,
        this.config.holder,
        lease,
        (client) => this.step(client, replay, open.get(replay.tenant_id) ?? []),
        (stale) => this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "replay" }),
      );
      if (!result.ok) return { leaseHeld: false, released, progress: [] };
      const step = result.value;
      released += step.released;
      if (step.progress) progress.push(step.progress);
      // Counted once committed: what the round's tally settled (the replay target's error rate, S17).
      const tenant = this.metrics.labels.tenant(replay.tenant_id, 0);
      for (const outcome of ["succeeded", "failed", "skipped"] as const) {
        const n = step.settled?.[outcome] ?? 0;
        if (n > 0) this.metrics.replayOutcomes.inc({ tenant, outcome }, n);
      }
      if (step.firstDueAt) await this.noteDue(lease.shard, replay.tenant_id, step.firstDueAt.getTime()).catch(() => {});
      if (step.event) this.logger.info({ replayId: replay.id, tenantId: replay.tenant_id, event: step.event, reason: step.reason }, `DLQ replay ${step.event}`);
    }
    return { leaseHeld: true, released, progress };
  }

  private async step(client: pg.PoolClient, replay: sql.ReplayRow, openDependencies: string[]): Promise<StepResult> {
    const tally = await sql.tallyReplay(client, replay.id);
    const settled = { succeeded: tally.succeeded, failed: tally.failed, skipped: tally.skipped };
    const progressOf = (failureRate: number | null, released = 0): ReplayProgress => ({
      tenantId: replay.tenant_id,
      status: replay.status,
      pending: tally.pending - released,
      inFlight: tally.inFlight + released,
      succeeded: replay.succeeded + tally.succeeded,
      failed: replay.failed + tally.failed,
      skipped: replay.skipped + tally.skipped,
      failureRate,
    });
    const idle = { released: 0, firstDueAt: null, settled, progress: progressOf(null) };
    if (replay.status === "cancelled") {
      if (tally.inFlight === 0) await sql.closeCancelledReplay(client, replay.id);
      return idle;
    }
    // Nothing left to release and nothing in flight: the replay is over, whatever its last verdict. A paused
    // one completes too, instead of offering a resume that would do nothing.
    if (tally.pending === 0 && tally.inFlight === 0) {
      // Done, but said plainly when the jobs kept failing: the last verdict goes with the completion.
      const last = judgeFailureRate(await sql.recentFirstOutcomes(client, replay.id, replay.judged_since, replay.failure_window), {
        window: replay.failure_window,
        threshold: replay.failure_threshold,
        total: replay.total - replay.skipped - tally.skipped,
      });
      const reason = last.pause ? `Every job was replayed, but ${last.summary} The root cause looks unfixed.` : null;
      if (await sql.concludeReplay(client, replay.id, "completed", reason)) {
        await this.audit(client, replay, "dlq.replay.completed", {
          succeeded: replay.succeeded + tally.succeeded,
          failed: replay.failed + tally.failed,
          skipped: replay.skipped + tally.skipped,
          ...(replay.status !== "running" ? { whilePaused: replay.status } : {}),
        });
      }
      return { ...idle, progress: undefined, event: "completed" };
    }
    if (replay.status !== "running") return idle;

    const recent = await sql.recentFirstOutcomes(client, replay.id, replay.judged_since, replay.failure_window);
    const skipped = replay.skipped + tally.skipped;
    let verdict = judgeFailureRate(recent, { window: replay.failure_window, threshold: replay.failure_threshold, total: replay.total - skipped });
    // An open breaker on the replay's targets pauses it too, until the operator resumes: a resume says the
    // cause is fixed, so from then on jobs held by a breaker still open wait for its probe, and only the
    // failure rate of attempts after the resume is judged.
    const resumed = replay.judged_since.getTime() > replay.created_at.getTime();
    const tripped = verdict.pause || resumed ? [] : await sql.replayDependenciesAmong(client, replay.id, openDependencies, replay.failure_window);
    if (tripped.length > 0) {
      const summary = `the circuit breaker of ${tripped.join(", ")} is open (the target is failing right now), so replayed jobs would only wait behind it or fail again.`;
      verdict = { pause: true, rate: verdict.rate ?? 0, summary, reason: `Paused automatically: ${summary} Resume once it is fixed.` };
    }
    if (verdict.pause) {
      if (await sql.concludeReplay(client, replay.id, "auto_paused", verdict.reason)) {
        await this.audit(client, replay, "dlq.replay.auto_paused", { reason: verdict.reason, failureRate: verdict.rate });
        this.metrics.replayAutoPauses.inc();
      }
      return { ...idle, progress: { ...progressOf(verdict.rate), status: "auto_paused" }, event: "auto-paused", reason: verdict.reason };
    }

    // Two brakes on releasing ahead of the work: released jobs not finished (a slow or breaker-held
    // target) and released jobs not started (workers behind the replay's start gate), so a pause or a
    // verdict leaves little already released, and workers never queue long at the gate.
    const maxInFlight = Math.max(2 * replay.failure_window, Math.ceil(replay.rate_per_second * this.config.inFlightSeconds));
    const maxWaiting = Math.ceil(replay.rate_per_second * (this.config.horizonMs / 1000 + 1));
    const now = await sql.databaseNow(client);
    const plan = planReleases({
      nowMs: now.getTime(),
      nextSlotMs: replay.next_slot_at?.getTime() ?? null,
      ratePerSecond: replay.rate_per_second,
      horizonMs: this.config.horizonMs,
      remaining: Math.min(tally.pending, Math.max(0, maxInFlight - tally.inFlight), Math.max(0, maxWaiting - tally.waiting)),
      maxBatch: this.config.batch,
    });
    if (plan.count === 0) return { ...idle, progress: progressOf(verdict.rate ?? null) };
    const out = await sql.releaseReplayJobs(
      client,
      { id: replay.id, tenantId: replay.tenant_id, attempts: replay.attempts },
      { count: plan.count, firstSlot: new Date(plan.firstSlotMs), spacingMs: plan.spacingMs, nextSlot: new Date(plan.nextSlotMs) },
    );
    this.metrics.replayReleased.inc(out.released);
    return { released: out.released, firstDueAt: out.firstDueAt, settled, progress: progressOf(verdict.rate ?? null, out.released) };
  }

  private audit(client: pg.PoolClient, replay: sql.ReplayRow, action: string, details: Record<string, unknown>) {
    return sql.insertAudit(client, { tenantId: replay.tenant_id, actorType: "system", actorId: `scheduler:${this.config.holder}`, action, targetType: "dlq_replay", targetId: replay.id, details });
  }
}
