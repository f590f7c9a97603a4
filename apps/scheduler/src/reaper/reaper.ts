import type pg from "pg";
import { decideAttemptOutcome } from "@tick/core";
import { sql } from "@tick/db";
import type { Logger } from "@tick/runtime";
import { refuseStale, withShardFence } from "../leases/shard-fence.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";

/** Most unstarted attempts per shard and round whose message is looked up in the broker. */
const UNSTARTED_CHECKED_PER_ROUND = 100;
/** A broker that has not answered the lookups by then is treated as unable to say. */
const BROKER_CHECK_TIMEOUT_MS = 1_000;

export interface ReaperConfig {
  holder: string;
  leaseGraceMs: number;
  strandedAfterMs: number;
  /**
   * An attempt not started this long after its publication has its message looked up in the broker; one
   * the broker can no longer deliver (consumed while Postgres was unreachable, lost with Redis) is
   * re-published at once instead of after strandedAfterMs.
   */
  unstartedCheckAfterMs: number;
  batch: number;
  random?: () => number;
}

export interface ReapResult {
  /** False when the shard lease was no longer ours: nothing was written. */
  leaseHeld: boolean;
  leasesReaped: number;
  republished: number;
  expired: number;
}

/**
 * Finds work that will not finish on its own, per held shard, in bounded batches, fenced like every
 * scheduler write: attempts whose lease expired (S1: the job retries through the normal path with a
 * new attempt ID and a higher fencing token, or goes to the DLQ when attempts are used up), dispatched
 * attempts no worker started (S10: re-published under the same attempt ID as soon as the broker can no
 * longer deliver their message, else after strandedAfterMs), and jobs past their
 * expiry deadline (S12).
 */
export class Reaper {
  constructor(
    private readonly pool: pg.Pool,
    private readonly config: ReaperConfig,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    /** Called after commit for each job put back to scheduled, so the due index learns about it. */
    private readonly noteDue: (shard: number, tenantId: string, dueAtMs: number) => Promise<void> = async () => {},
    /** Whether the attempt's newest broker message can still reach a worker; throws when the broker cannot say. */
    private readonly messageDeliverable: (attempt: { id: string; message_id: string | null }) => Promise<boolean> = async () => true,
  ) {}

  /**
   * Unstarted attempts of the shard whose message will never reach a worker. Asked before the fenced
   * transaction (no broker round trip while it holds locks); when the broker does not answer in time,
   * none: the stranded re-publish still covers them.
   */
  private async undeliverable(shard: number): Promise<string[]> {
    const unstarted = await sql.findUnstartedAttempts(this.pool, shard, this.config.unstartedCheckAfterMs, UNSTARTED_CHECKED_PER_ROUND);
    if (unstarted.length === 0) return [];
    let timer: NodeJS.Timeout | undefined;
    const answered = Promise.all(unstarted.map(async (attempt) => ((await this.messageDeliverable(attempt)) ? null : attempt.id)));
    answered.catch(() => {});
    try {
      const verdicts = await Promise.race([answered, new Promise<null>((r) => (timer = setTimeout(() => r(null), BROKER_CHECK_TIMEOUT_MS)))]);
      return (verdicts ?? []).filter((id): id is string => id !== null);
    } catch (err) {
      this.logger.warn({ err: (err as Error).message, shard }, "could not ask the broker about unstarted attempts; the stranded re-publish covers them");
      return [];
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One round over the held shards: a single read says which have anything to reap (sql.shardsToReap);
   * only those get the broker check and the fenced pass. One result per held shard, in `held` order.
   */
  async runRound(held: readonly HeldLease[]): Promise<ReapResult[]> {
    const probe = await sql.shardsToReap(this.pool, this.config.holder, held, {
      marginMs: this.config.leaseGraceMs,
      unstartedAfterMs: Math.min(this.config.unstartedCheckAfterMs, this.config.strandedAfterMs),
    });
    const results: ReapResult[] = [];
    for (const lease of held) {
      if (probe.stale.has(lease.shard)) {
        await refuseStale(this.pool, lease, this.onStale);
        results.push({ leaseHeld: false, leasesReaped: 0, republished: 0, expired: 0 });
      } else if (probe.busy.has(lease.shard)) {
        results.push(await this.runShard(lease));
      } else {
        results.push({ leaseHeld: true, leasesReaped: 0, republished: 0, expired: 0 });
      }
    }
    return results;
  }

  private readonly onStale = (stale: HeldLease) => this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "reaper" });

  async runShard(lease: HeldLease): Promise<ReapResult> {
    const random = this.config.random ?? Math.random;
    const undeliverable = await this.undeliverable(lease.shard);
    const result = await withShardFence(
      this.pool,
      this.config.holder,
      lease,
      async (client) => {
        const rescheduled: { tenantId: string; dueAtMs: number }[] = [];
        // Decide every lost attempt's fate in code, then settle the batch with one statement.
        const settlements: sql.LeaseSettlement[] = (await sql.lockExpiredLeases(client, lease.shard, this.config.leaseGraceMs, this.config.batch)).map((lost) => ({
          lease: lost,
          decision: decideAttemptOutcome({
            ended: "lease_expired",
            attemptCount: lost.attempt_count,
            maxAttempts: lost.max_attempts,
            backoff: lost.backoff,
            now: lost.db_now,
            expiresAt: lost.expires_at,
            // Read under the job's row lock: no cancel can be recorded before the settlement commits.
            cancelRequested: lost.cancel_requested_at !== null,
            random,
          }),
        }));
        // Each settled job that ended gets its completion webhooks from the same statement (sql/finish.ts).
        const settled = await sql.settleExpiredLeases(client, settlements, this.config.leaseGraceMs);
        for (const { lease: lost, decision } of settlements) {
          if (!settled.has(lost.job_id)) continue;
          if (decision.kind === "retry") rescheduled.push({ tenantId: lost.tenant_id, dueAtMs: lost.db_now.getTime() + decision.dueInMs });
          this.metrics.leasesReaped.inc({ decision: decision.kind });
          // The lost worker may still be sending while the key's slot goes to the next attempt (docs/api.md "Flow keys").
          if (lost.flow_key !== null) this.metrics.flowKeyLeaseExpiries.inc();
          this.logger.warn(
            { tenantId: lost.tenant_id, jobId: lost.job_id, attemptId: lost.attempt_id, shard: lease.shard, epoch: lease.epoch, decision: decision.kind },
            "attempt lease expired",
          );
        }
        const leasesReaped = settled.size;
        const republished = await sql.republishStrandedAttempts(client, lease.shard, this.config.strandedAfterMs, this.config.batch, undeliverable);
        const expired = (await sql.expireOverdueJobs(client, lease.shard, this.config.batch)).length;
        return { leasesReaped, republished, expired, rescheduled };
      },
      this.onStale,
    );
    if (!result.ok) return { leaseHeld: false, leasesReaped: 0, republished: 0, expired: 0 };
    const { rescheduled, ...counts } = result.value;
    for (const r of rescheduled) await this.noteDue(lease.shard, r.tenantId, r.dueAtMs);
    this.metrics.republished.inc(counts.republished);
    this.metrics.expired.inc(counts.expired);
    return { leaseHeld: true, ...counts };
  }
}
