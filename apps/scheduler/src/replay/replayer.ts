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
  fenced: boolean;
  released: number;
}

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
  ) {}

  async runShard(lease: HeldLease): Promise<ReplayRound> {
    let released = 0;
    for (const replay of await sql.openReplaysOfShard(this.pool, lease.shard)) {
      const result = await withShardFence(
        this.pool,
        this.config.holder,
        lease,
        (client) => this.step(client, replay),
        (stale) => this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "replay" }),
      );
      if (!result.ok) return { fenced: false, released };
      const step = result.value;
      released += step.released;
      if (step.firstDueAt) await this.noteDue(lease.shard, replay.tenant_id, step.firstDueAt.getTime()).catch(() => {});
      if (step.event) this.logger.info({ replayId: replay.id, tenantId: replay.tenant_id, event: step.event, reason: step.reason }, `DLQ replay ${step.event}`);
    }
    return { fenced: true, released };
  }

  private async step(client: pg.PoolClient, replay: sql.ReplayRow): Promise<{ released: number; firstDueAt: Date | null; event?: string; reason?: string }> {
    const tally = await sql.tallyReplay(client, replay.id);
    const idle = { released: 0, firstDueAt: null };
    if (replay.status === "cancelled") {
      if (tally.inFlight === 0) await sql.closeCancelledReplay(client, replay.id);
      return idle;
    }
    if (replay.status !== "running") return idle;

    const recent = await sql.recentFirstOutcomes(client, replay.id, replay.judged_since, replay.failure_window);
    const skipped = replay.skipped + tally.skipped;
    const verdict = judgeFailureRate(recent, { window: replay.failure_window, threshold: replay.failure_threshold, total: replay.total - skipped });
    if (verdict.pause) {
      if (await sql.concludeReplay(client, replay.id, "auto_paused", verdict.reason)) {
        await this.audit(client, replay, "dlq.replay.auto_paused", { reason: verdict.reason, failureRate: verdict.rate });
        this.metrics.replayAutoPauses.inc();
      }
      return { ...idle, event: "auto-paused", reason: verdict.reason };
    }
    if (tally.pending === 0 && tally.inFlight === 0) {
      if (await sql.concludeReplay(client, replay.id, "completed", null)) {
        await this.audit(client, replay, "dlq.replay.completed", {
          succeeded: replay.succeeded + tally.succeeded,
          failed: replay.failed + tally.failed,
          skipped,
        });
      }
      return { ...idle, event: "completed" };
    }

    const maxInFlight = Math.max(2 * replay.failure_window, Math.ceil(replay.rate_per_second * this.config.inFlightSeconds));
    const now = await sql.databaseNow(client);
    const plan = planReleases({
      nowMs: now.getTime(),
      nextSlotMs: replay.next_slot_at?.getTime() ?? null,
      ratePerSecond: replay.rate_per_second,
      horizonMs: this.config.horizonMs,
      remaining: Math.min(tally.pending, Math.max(0, maxInFlight - tally.inFlight)),
      maxBatch: this.config.batch,
    });
    if (plan.count === 0) return idle;
    const out = await sql.releaseReplayJobs(
      client,
      { id: replay.id, tenantId: replay.tenant_id, attempts: replay.attempts },
      { count: plan.count, firstSlot: new Date(plan.firstSlotMs), spacingMs: plan.spacingMs, nextSlot: new Date(plan.nextSlotMs) },
    );
    this.metrics.replayReleased.inc(out.released);
    return { released: out.released, firstDueAt: out.firstDueAt };
  }

  private audit(client: pg.PoolClient, replay: sql.ReplayRow, action: string, details: Record<string, unknown>) {
    return sql.insertAudit(client, { tenantId: replay.tenant_id, actorType: "system", actorId: `scheduler:${this.config.holder}`, action, targetType: "dlq_replay", targetId: replay.id, details });
  }
}
