import type pg from "pg";
import { DeficitRoundRobin } from "@tick/core";
import { sql } from "@tick/db";
import type { FaultPoints, Logger } from "@tick/runtime";
import { withShardFence } from "../leases/shard-fence.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";
import type { DueTenantSource } from "./due-tenant-source.js";
import type { RateLimiter } from "./rate-limiter.js";

export interface DispatcherConfig {
  holder: string;
  batch: number;
  maxQueuedPerShard: number;
}

export interface DispatchRound {
  shard: number;
  claimed: number;
  /** False when the shard lease was no longer ours: nothing was written. */
  leaseHeld: boolean;
  perTenant: Map<string, number>;
}

/**
 * One dispatch round for a shard: how much may go out (shallow broker queue, global rate), who gets
 * it (weighted deficit round robin across tenants with due work, each within its in-flight cap), and
 * the claims themselves, in one transaction fenced by the shard lease.
 */
export class Dispatcher {
  private readonly fairness = new Map<number, DeficitRoundRobin>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly config: DispatcherConfig,
    private readonly rate: RateLimiter,
    private readonly dueSource: DueTenantSource,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
    private readonly faults: FaultPoints,
    /** Dependencies whose circuit breaker is open (their jobs are held); [] when unknown. */
    private readonly openDependencies: () => Promise<string[]> = async () => [],
  ) {}

  async runShard(lease: HeldLease): Promise<DispatchRound> {
    const round: DispatchRound = { shard: lease.shard, claimed: 0, leaseHeld: true, perTenant: new Map() };
    if (this.rate.available() <= 0) return round;
    // Who is due first (the Redis index answers without touching Postgres): an idle shard costs no query.
    const { tenants: due, mode, generations } = await this.dueSource.find(lease.shard);
    if (due.length === 0) return round;
    const queued = await sql.countQueuedAttempts(this.pool, lease.shard);
    let budget = Math.min(this.config.batch, this.config.maxQueuedPerShard - queued, this.rate.available());
    if (budget <= 0) return round;
    const heldDependencies = await this.openDependencies().catch(() => []);

    const drr = this.fairness.get(lease.shard) ?? new DeficitRoundRobin();
    this.fairness.set(lease.shard, drr);
    const room = new Map(due.map((t) => [t.tenant_id, Math.max(0, t.max_in_flight - t.in_flight)]));
    const weights = new Map(due.map((t) => [t.tenant_id, t.weight]));

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
            const claimed = await sql.claimDueJobs(client, { shard: lease.shard, epoch: lease.epoch, tenantId, limit: n, heldDependencies });
            round.perTenant.set(tenantId, (round.perTenant.get(tenantId) ?? 0) + claimed.length);
            round.claimed += claimed.length;
            budget -= claimed.length;
            // A tenant that could not fill its allocation has nothing more due (or is capped) this round.
            room.set(tenantId, claimed.length < n ? 0 : room.get(tenantId)! - claimed.length);
          }
        }
        this.faults.hit("dispatch.before-commit");
      },
      (stale) => {
        this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "dispatch" });
        this.logger.warn({ shard: stale.shard, epoch: stale.epoch }, "dispatch refused: shard lease is no longer ours at this epoch");
      },
    );
    if (!result.ok) return { ...round, claimed: 0, leaseHeld: false, perTenant: new Map() };
    // Tenants that ran out of due work get their next due time in the index.
    if (mode === "index") {
      for (const [tenantId, left] of room) {
        if (left === 0 && generations.has(tenantId)) await this.dueSource.settle(lease.shard, tenantId, generations.get(tenantId)!);
      }
    }
    this.faults.hit("dispatch.after-commit");
    this.rate.take(round.claimed);
    this.metrics.dispatched.inc({ shard: String(lease.shard) }, round.claimed);
    return round;
  }
}
