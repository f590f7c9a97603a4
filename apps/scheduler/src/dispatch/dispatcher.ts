import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Queue } from "bullmq";
import { DeficitRoundRobin, dispatchChunkId, formatTraceparent, type AttemptChunkMessage, type AttemptMessage } from "@tick/core";
import { sql } from "@tick/db";
import { NO_TRACING, type FaultPoints, type Logger, type Tracing } from "@tick/runtime";
import { withShardFence } from "../leases/shard-fence.js";
import { MESSAGE_OPTIONS, publishWithin } from "../outbox/outbox-relay.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";
import type { DueTenantSource } from "./due-tenant-source.js";
import type { RateLimiter } from "./rate-limiter.js";

export interface DispatcherConfig {
  holder: string;
  batch: number;
  maxQueuedPerShard: number;
  /** Most attempts per broker message; 1 sends a message per attempt. */
  chunkSize: number;
  /** A publish not answered within this counts as failed: the reaper re-publishes what it carried. */
  publishTimeoutMs: number;
}

export interface DispatchRound {
  shard: number;
  claimed: number;
  /** False when the shard lease was no longer ours: nothing was written. */
  leaseHeld: boolean;
  /**
   * Due work may be left that this round could not take: the broker queue was full, the round used its
   * whole budget, or the rate limit ran out. The dispatcher comes back soon instead of waiting a poll.
   */
  more: boolean;
  /** With `more`: the soonest this shard is worth another round (its broker backlog is full); none: at once. */
  retryInMs?: number;
  perTenant: Map<string, number>;
}

/**
 * A shard whose broker backlog is full is looked at again after the busy interval while workers may take from it.
 * When no worker heartbeats (none running), or the backlog has not moved for STALLED_AFTER_MS, it is looked at
 * after FULL_BACKOFF_FIRST_MS, then twice as long each time it is still full, up to FULL_BACKOFF_MAX_MS. Without
 * that, a shard nobody takes from cost two queries every 5 ms. Waiting on a backlog that workers take from, even
 * 40-80 ms at a time, bunched a rate-limited key's calls, and so did waiting after a second without movement at
 * start-up (cold workers): a run's first second then carried up to twice a key's rate.
 */
const STALLED_AFTER_MS = 5_000;
const FULL_BACKOFF_FIRST_MS = 5;
const FULL_BACKOFF_MAX_MS = 250;
/** How long an answer to "is any worker alive" is used. */
const WORKERS_ALIVE_TTL_MS = 1_000;

/** Most jobs a round ends per tenant for being over their flow key's rate (the rest go in the next rounds). */
const DROP_BATCH = 1_000;

/** Rank units per unstarted attempt of a weight-1 tenant (ranks are integers; weights may be fractional). */
const RANK_UNIT = 1_000;
/** BullMQ's largest priority; ranks are capped there. */
const MAX_RANK = 2_097_152;

/**
 * One dispatch round for a shard: how much may go out (shallow broker queue, global rate), who gets
 * it (weighted deficit round robin across tenants with due work, each within its in-flight cap), the
 * claims themselves, in one transaction fenced by the shard lease, and, once that has committed, the
 * broker messages (no outbox row; the pending attempts are the durable record, and the reaper
 * re-publishes any whose message never reached a worker).
 */
export class Dispatcher {
  private readonly fairness = new Map<number, DeficitRoundRobin>();
  /**
   * Per tenant, each keyed queue's round-robin cursor (sql.advanceKeyCursors). Held in memory: a scheduler that
   * takes a shard over starts each queue's rotation from its first key, which costs one rotation's order, not fairness.
   */
  private readonly keyCursors = new Map<string, Record<string, string>>();
  /** Per shard whose broker backlog was full at its last round: that backlog, since when it has not moved, the wait and when it ends. */
  private readonly full = new Map<number, { queued: number; since: number; waitMs: number; until: number }>();
  private workersAlive: { alive: boolean; at: number } | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly queue: Queue,
    private readonly config: DispatcherConfig,
    private readonly rate: RateLimiter,
    private readonly dueSource: DueTenantSource,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    private readonly faults: FaultPoints,
    /** Per tenant, the dependencies whose circuit breaker is open (their jobs are held); empty when unknown. */
    private readonly openDependencies: () => Promise<Map<string, string[]>> = async () => new Map(),
    /** A "dispatch" span per published round when tracing is on; its messages carry it for the attempts to link. */
    private readonly tracing: Tracing = NO_TRACING,
  ) {}

  async runShard(lease: HeldLease): Promise<DispatchRound> {
    const round: DispatchRound = { shard: lease.shard, claimed: 0, leaseHeld: true, more: false, perTenant: new Map() };
    if (this.rate.available() <= 0) {
      this.metrics.dispatchThrottled.inc({ reason: "rate" });
      return { ...round, more: true };
    }
    const full = this.full.get(lease.shard);
    const now = Date.now();
    if (full && now < full.until) return { ...round, more: true, retryInMs: full.until - now };
    // Who is due first (the Redis index answers without touching Postgres): an idle shard costs no query.
    const { tenants: due, mode, generations } = await this.dueSource.find(lease.shard);
    if (due.length === 0) return round;
    // The broker-side backlog, and which due tenants have a rate-limited queue (their claim keeps its rate windows).
    const { queued, rated, keyed, dropping } = await sql.roundFacts(this.pool, lease.shard, due.map((t) => t.tenant_id));
    if (this.config.maxQueuedPerShard - queued.total <= 0) {
      this.metrics.dispatchThrottled.inc({ reason: "queue_full" });
      const at = Date.now();
      const since = full && full.queued === queued.total ? full.since : at;
      const idle = at - since >= STALLED_AFTER_MS || !(await this.anyWorkerAlive(at));
      const waitMs = idle ? Math.min(FULL_BACKOFF_MAX_MS, Math.max(FULL_BACKOFF_FIRST_MS, (full?.waitMs ?? 0) * 2)) : 0;
      this.full.set(lease.shard, { queued: queued.total, since, waitMs, until: at + waitMs });
      return { ...round, more: true, ...(waitMs > 0 ? { retryInMs: waitMs } : {}) };
    }
    this.full.delete(lease.shard);
    let budget = Math.min(this.config.batch, this.config.maxQueuedPerShard - queued.total, this.rate.available());
    if (budget <= 0) {
      this.metrics.dispatchThrottled.inc({ reason: "rate" });
      return { ...round, more: true };
    }
    const initialBudget = budget;
    const heldByTenant = await this.openDependencies().catch(() => new Map<string, string[]>());

    const drr = this.fairness.get(lease.shard) ?? new DeficitRoundRobin();
    this.fairness.set(lease.shard, drr);
    const room = new Map(due.map((t) => [t.tenant_id, Math.max(0, t.max_in_flight - t.in_flight)]));
    const weights = new Map(due.map((t) => [t.tenant_id, t.weight]));
    // Every attempt of the round is carried by one of these messages, in claim order.
    const chunkSize = Math.max(1, this.config.chunkSize);
    const chunks: sql.ClaimChunks = { ids: Array.from({ length: Math.ceil(budget / chunkSize) }, () => randomUUID()), size: chunkSize, offset: 0 };
    const claimedRows: sql.ClaimedJob[] = [];
    let droppedJobs = 0;
    let moreToDrop = false;

    const result = await withShardFence(
      this.pool,
      this.config.holder,
      lease,
      async (client) => {
        // Up to three passes: budget a tenant could not use (fewer due jobs than its share) goes to the others.
        for (let pass = 0; pass < 3 && budget > 0; pass++) {
          const candidates = [...room.entries()]
            .filter(([, r]) => r > 0)
            .map(([tenantId, r]) => ({ tenantId, weight: weights.get(tenantId)!, room: r }));
          const allocation = drr.allocate(candidates, budget);
          if (allocation.size === 0) break;
          for (const [tenantId, n] of allocation) {
            const cursors = keyed.has(tenantId) ? (this.keyCursors.get(tenantId) ?? {}) : undefined;
            const claimed = await sql.claimDueJobs(client, {
              shard: lease.shard,
              epoch: lease.epoch,
              tenantId,
              limit: n,
              heldDependencies: heldByTenant.get(tenantId) ?? [],
              chunks,
              rated: rated.has(tenantId),
              keyed: cursors !== undefined,
              ...(cursors ? { keyCursors: cursors } : {}),
            });
            if (cursors) {
              sql.advanceKeyCursors(cursors, claimed);
              this.keyCursors.set(tenantId, cursors);
            }
            chunks.offset += claimed.length;
            claimedRows.push(...claimed);
            round.perTenant.set(tenantId, (round.perTenant.get(tenantId) ?? 0) + claimed.length);
            round.claimed += claimed.length;
            budget -= claimed.length;
            // A tenant that could not fill its allocation has nothing more due (or is capped) this round.
            room.set(tenantId, claimed.length < n ? 0 : room.get(tenantId)! - claimed.length);
          }
        }
        // Keys over their rate in queues that drop: their due jobs end rate_limited, after the claims spent the buckets.
        for (const tenantId of dropping) {
          const dropped = await sql.dropRateLimitedJobs(client, lease.shard, tenantId, DROP_BATCH);
          droppedJobs += dropped.length;
          if (dropped.length >= DROP_BATCH) moreToDrop = true;
        }
        this.faults.hit("dispatch.before-commit");
      },
      (stale) => {
        this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "dispatch" });
        this.logger.warn({ shard: stale.shard, epoch: stale.epoch }, "dispatch refused: shard lease is no longer ours at this epoch");
      },
    );
    if (!result.ok) return { ...round, claimed: 0, leaseHeld: false, perTenant: new Map() };
    this.faults.hit("dispatch.after-commit");
    if (droppedJobs > 0) this.metrics.flowKeyDropped.inc(droppedJobs);
    await this.publish(lease, claimedRows, queued.byTenant, weights);
    // Tenants that ran out of due work get their next due time in the index.
    if (mode === "index") {
      for (const [tenantId, left] of room) {
        if (left === 0 && generations.has(tenantId)) await this.dueSource.settle(lease.shard, tenantId, generations.get(tenantId)!);
      }
    }
    this.rate.take(round.claimed);
    const shard = String(lease.shard);
    for (const [tenantId, n] of round.perTenant) if (n > 0) this.metrics.dispatched.inc({ shard, tenant: this.metrics.labels.tenant(tenantId, n) }, n);
    round.more = (round.claimed > 0 && round.claimed >= initialBudget) || moreToDrop;
    return round;
  }

  /** Whether any worker heartbeats, asked at most once per WORKERS_ALIVE_TTL_MS; an error counts as alive (no backoff). */
  private async anyWorkerAlive(now: number): Promise<boolean> {
    if (this.workersAlive && now - this.workersAlive.at < WORKERS_ALIVE_TTL_MS) return this.workersAlive.alive;
    const alive = await sql.anyWorkerAlive(this.pool).catch(() => true);
    this.workersAlive = { alive, at: now };
    return alive;
  }

  /**
   * Sends the committed claims to the broker, a message per chunk. Each attempt carries its fair rank: its
   * place among its tenant's unstarted attempts of the shard (those queued before the round, then this
   * round's in claim order), divided by the tenant's weight. A failed publish loses nothing: the attempts
   * are pending in Postgres, and the reaper re-publishes them once the broker says it cannot deliver them.
   */
  private async publish(lease: HeldLease, rows: sql.ClaimedJob[], queuedBefore: Map<string, number>, weights: Map<string, number>): Promise<void> {
    if (rows.length === 0) return;
    const position = new Map(queuedBefore);
    const messages = new Map<string, AttemptMessage[]>();
    for (const row of rows) {
      const place = (position.get(row.tenant_id) ?? 0) + 1;
      position.set(row.tenant_id, place);
      const rank = Math.min(MAX_RANK, Math.floor((place * RANK_UNIT) / Math.max(weights.get(row.tenant_id) ?? 1, 0.001)));
      const attempt: AttemptMessage = {
        jobId: row.id,
        attemptId: row.attempt_id,
        tenantId: row.tenant_id,
        version: row.version,
        fencingToken: row.fencing_token,
        shard: lease.shard,
        epoch: lease.epoch,
        dependency: row.dependency_key,
        attemptCount: row.attempt_count,
        rank,
      };
      const id = dispatchChunkId(row.message_id!);
      const chunk = messages.get(id);
      if (chunk) chunk.push(attempt);
      else messages.set(id, [attempt]);
    }
    // One span for the round's publication (not one per job: a round is up to a batch of them), tracing on
    // only. Its own trace; each attempt's span links to it, so a job's trace leads to the round that sent it.
    const span = this.tracing.enabled
      ? this.tracing.startSpan("dispatch", {
          kind: "producer",
          attributes: { "tick.shard": lease.shard, "tick.epoch": lease.epoch, "tick.dispatch.attempts": rows.length, "tick.dispatch.messages": messages.size },
        })
      : null;
    const traceparent = span?.recording ? formatTraceparent(span.context) : undefined;
    const bulk = [...messages].map(([jobId, attempts]) => ({
      name: "dispatch",
      data: { attempts, ...(traceparent ? { traceparent } : {}) } satisfies AttemptChunkMessage,
      // The broker serves the lowest priority first: a chunk led by a quiet tenant's attempt goes ahead.
      opts: { jobId, priority: Math.max(1, Math.min(...attempts.map((a) => a.rank ?? 0))), ...MESSAGE_OPTIONS },
    }));
    try {
      await publishWithin(this.queue.addBulk(bulk), this.config.publishTimeoutMs);
      this.metrics.published.inc({ kind: "dispatch" }, rows.length);
    } catch (err) {
      span?.fail((err as Error).message);
      this.metrics.publishFailures.inc();
      this.logger.warn(
        { err: (err as Error).message, shard: lease.shard, epoch: lease.epoch, attempts: rows.length },
        "dispatch publish failed; the attempts are pending in Postgres and the reaper re-publishes them",
      );
    } finally {
      span?.end();
    }
  }
}
