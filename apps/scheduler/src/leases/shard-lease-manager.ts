import { sql, type Queryable } from "@tick/db";
import type { Logger } from "@tick/runtime";
import type { SchedulerMetrics } from "../metrics.js";
import { planShards, type ShardRegions } from "./shard-regions.js";

export interface ShardLeaseConfig {
  holder: string;
  region: string;
  shardCount: number;
  ttlMs: number;
  /** Home regions of shards (TICK_SHARD_REGIONS); empty: any scheduler may hold any shard. */
  shardRegions?: ShardRegions;
  /** What the heartbeat says about this process (version, /readyz address, due-index mode per shard), for the status page. */
  status?: (held: readonly number[]) => sql.NodeStatus & { dueIndex: Record<string, string> };
}

export interface HeldLease {
  shard: number;
  epoch: string;
}

/**
 * Acquires, renews and balances this scheduler's shard leases. Each scheduler aims at its fair share
 * (shards / live schedulers, rounded up); extra shards are released so a newcomer gets some at once,
 * and shards of a dead scheduler are taken once their lease expires (database time). With home regions
 * (S18) a shard goes to its region's schedulers while one is alive, to any region's while none is, and is
 * handed back when its region returns (planShards). What this class believes is only a hint: every write
 * is fenced in the database (sql.shardFenceStatement).
 */
export class ShardLeaseManager {
  private held = new Map<number, HeldLease>();
  /** performance.now() of the last renewal that came back, to warn when renewals run late. */
  private lastRenewedAt: number | undefined;
  private lastTick = { startedAt: 0, endedAt: 0 };

  constructor(
    private readonly db: Queryable,
    private readonly config: ShardLeaseConfig,
    private readonly logger: Logger,
    private readonly metrics?: Pick<SchedulerMetrics, "shardRenewals" | "shardLeasesLost" | "shardAcquisitions">,
  ) {}

  heldShards(): HeldLease[] {
    return [...this.held.values()].sort((a, b) => a.shard - b.shard);
  }

  async init(): Promise<void> {
    await sql.ensureShardLeases(this.db, this.config.shardCount);
  }

  /** One renewal/acquisition/balancing pass; returns the shards held afterwards. */
  async tick(): Promise<HeldLease[]> {
    const { holder, region, ttlMs, shardCount } = this.config;
    const before = this.heldShards();
    const startedAt = performance.now();
    const renewed = await sql.renewShards(this.db, holder, before, ttlMs);
    const doneAt = performance.now();
    if (before.length > 0 && this.lastRenewedAt !== undefined && doneAt - this.lastRenewedAt > ttlMs / 2) {
      // Leases are lost when renewals come later than the TTL: say how close it was and where the time went.
      this.logger.warn(
        {
          sinceLastRenewalMs: Math.round(doneAt - this.lastRenewedAt),
          renewQueryMs: Math.round(doneAt - startedAt),
          previousRoundMs: Math.round(this.lastTick.endedAt - this.lastTick.startedAt),
          idleBeforeThisRoundMs: Math.round(startedAt - this.lastTick.endedAt),
          ttlMs,
        },
        "shard lease renewal ran late",
      );
    }
    if (before.length > 0) this.lastRenewedAt = doneAt;
    const kept = new Set(renewed.map((r) => r.shard));
    this.metrics?.shardRenewals.inc(renewed.length);
    for (const lost of before.filter((h) => !kept.has(h.shard))) {
      this.logger.warn({ shard: lost.shard, epoch: lost.epoch }, "shard lease lost (renewal refused)");
      this.metrics?.shardLeasesLost.inc();
      this.held.delete(lost.shard);
    }

    await sql.heartbeatSchedulerNode(this.db, holder, region, ttlMs, this.config.status?.([...this.held.keys()].sort((a, b) => a - b)));
    const live = await sql.liveSchedulers(this.db);
    live.set(holder, { held: this.held.size, region });
    const plan = planShards({ holder, region, shardCount, homes: this.config.shardRegions ?? new Map(), live, held: [...this.held.keys()] });
    if (plan.handBack.length > 0) {
      // Their home region has live schedulers again: give the shards back (they take them with a higher epoch).
      const back = this.heldShards().filter((h) => plan.handBack.includes(h.shard));
      await sql.releaseShards(this.db, holder, back);
      for (const h of back) this.held.delete(h.shard);
      this.logger.info({ shards: back.map((h) => h.shard) }, "handed shards back to their home region");
    }
    const fairShare = plan.fairShare;
    if (this.held.size < fairShare) {
      const free = plan.pool.filter((s) => !this.held.has(s));
      for (const got of await sql.acquireShards(this.db, holder, region, ttlMs, fairShare - this.held.size, shardCount, free)) {
        this.held.set(got.shard, { shard: got.shard, epoch: got.epoch });
        // An expired lease still names its holder (a release clears it): this is a takeover (S2).
        const kind = got.previousHolder === null ? "free" : "takeover";
        this.metrics?.shardAcquisitions.inc({ kind });
        this.logger.info({ shard: got.shard, epoch: got.epoch, kind, previousHolder: got.previousHolder }, "shard lease acquired");
      }
      if (before.length === 0) this.lastRenewedAt = performance.now();
    } else if (this.held.size > fairShare) {
      // Someone holds fewer than their share (a scheduler just joined): hand over the surplus, other
      // regions' shards first.
      const ordered = [...this.heldShards()].sort((a, b) => plan.pool.indexOf(a.shard) - plan.pool.indexOf(b.shard));
      const surplus = ordered.slice(fairShare);
      if (plan.starving(surplus.map((s) => s.shard))) {
        await sql.releaseShards(this.db, holder, surplus);
        for (const s of surplus) this.held.delete(s.shard);
        this.logger.info({ shards: surplus.map((s) => s.shard) }, "released surplus shards for balance");
      }
    }
    this.lastTick = { startedAt, endedAt: performance.now() };
    return this.heldShards();
  }

  /** Clean shutdown: give every shard back so a follower takes over without waiting for the TTL. */
  async releaseAll(): Promise<void> {
    const all = this.heldShards();
    this.held.clear();
    await sql.releaseShards(this.db, this.config.holder, all);
    await sql.removeSchedulerNode(this.db, this.config.holder);
  }
}
