import type pg from "pg";
import { sql } from "@tick/db";
import type { Logger } from "@tick/runtime";
import { refuseStale, withShardFence } from "../leases/shard-fence.js";
import type { HeldLease } from "../leases/shard-lease-manager.js";
import type { SchedulerMetrics } from "../metrics.js";

export interface MaintenanceConfig {
  holder: string;
  /** Finished jobs (succeeded, cancelled, expired) stay in the hot table this long before moving to history. */
  archiveAfterMs: number;
  /** Most rows per statement (and per transaction). */
  batch: number;
  /** Most batches per shard per round, so one round stays short whatever the backlog. */
  maxBatchesPerRound: number;
  /** Deployment-wide ceiling on any tenant's retention; history partitions older than this are dropped. */
  retentionMaxDays: number;
  /** Published outbox rows are kept this long (for inspection) before they are deleted. */
  outboxKeepMs: number;
  /** History partitions created ahead of time, in days. */
  partitionsAheadDays: number;
  /**
   * Most time per round spent deleting expired history (across all held shards): retention is background
   * work and yields to dispatch, which shares the database's CPU. Moves to history are not budgeted; they
   * keep pace with what finishes.
   */
  pruneBudgetMs: number;
}

/** A debounce window is forgotten this long after it closed (its job no longer scheduled). */
const DEBOUNCE_WINDOW_KEEP_MS = 60_000;

/** What is left of a round's time for deleting history. */
export interface PruneBudget {
  remainingMs: number;
}

export interface MaintenanceResult {
  /** Finished jobs counted into the per-minute rollups. */
  rolledUpJobs: number;
  archivedJobs: number;
  archivedAttempts: number;
  prunedJobs: number;
  /** True when the shard lease was no longer ours and a write was refused (the round stopped there). */
  refused: boolean;
}

/**
 * The data lifecycle, a scheduler loop like the others: per held shard and fenced by its
 * lease, finished jobs are counted into the per-minute rollups the console's charts read and each
 * queue's figures sampled once a minute, then finished jobs and their attempts move from the hot tables
 * into day-partitioned history (never before they are counted), and
 * history past the tenant's retention is deleted in bounded batches. The holder of the lowest shard also
 * does the deployment-wide part: history partitions ahead and behind (dropped whole past the retention
 * ceiling), expired idempotency keys, published outbox rows and old webhook deliveries. Every statement
 * touches at most `batch` rows, in its own short transaction, with SKIP LOCKED, so it never holds up
 * dispatch.
 */
export class Maintenance {
  constructor(
    private readonly pool: pg.Pool,
    private readonly config: MaintenanceConfig,
    private readonly logger: Logger,
    private readonly metrics: SchedulerMetrics,
  ) {}

  private readonly onStale = (stale: HeldLease) => this.metrics.staleWrites.inc({ shard: String(stale.shard), component: "maintenance" });

  private fence<T>(lease: HeldLease, fn: (client: pg.PoolClient) => Promise<T>) {
    return withShardFence(this.pool, this.config.holder, lease, fn, this.onStale);
  }

  private count(task: string, n: number): void {
    if (n > 0) this.metrics.maintenanceRows.inc({ task }, n);
  }

  /** Which held shard deletes history first in the next round (rotates, so none waits behind the others for ever). */
  private pruneOffset = 0;

  /** Per shard: when (this process's clock) the database's next minute starts, the next gauge sample due. */
  private readonly nextGaugeSampleAt = new Map<number, number>();

  /**
   * One round over the held shards: every shard's finished jobs move to history; then expired history is
   * deleted shard by shard within one time budget (pruneBudgetMs) for the whole round; then, if shard 0 is
   * held, the deployment-wide part. Returns one result per held shard, in `held` order.
   */
  async runRound(held: HeldLease[]): Promise<MaintenanceResult[]> {
    const results: MaintenanceResult[] = [];
    // One read first says which shards have anything to move or delete (and which leases went stale);
    // only those get fenced passes.
    const [toRollUp, toArchive, toPrune] = await Promise.all([
      sql.shardsToRollUp(this.pool, this.config.holder, held),
      sql.shardsToArchive(this.pool, this.config.holder, held, this.config.archiveAfterMs),
      sql.shardsToPrune(this.pool, this.config.holder, held, this.config.retentionMaxDays),
    ]);
    for (const lease of held) {
      const result: MaintenanceResult = { rolledUpJobs: 0, archivedJobs: 0, archivedAttempts: 0, prunedJobs: 0, refused: false };
      if (toArchive.stale.has(lease.shard)) {
        await refuseStale(this.pool, lease, this.onStale);
        result.refused = true;
        results.push(result);
        continue;
      }
      // Counted before moved: the archiver takes only jobs below the shard's rollup watermark.
      if (toRollUp.busy.has(lease.shard)) {
        const rolled = await this.rollUpShard(lease);
        result.rolledUpJobs = rolled.rolledUpJobs;
        if (rolled.refused) {
          results.push({ ...result, refused: true });
          continue;
        }
      }
      if ((await this.sampleGauges(lease)).refused) {
        results.push({ ...result, refused: true });
        continue;
      }
      results.push(toArchive.busy.has(lease.shard) ? { ...(await this.archiveShard(lease)), rolledUpJobs: result.rolledUpJobs } : result);
    }
    const budget: PruneBudget = { remainingMs: this.config.pruneBudgetMs };
    const first = this.pruneOffset % Math.max(1, held.length);
    this.pruneOffset = first + 1;
    for (let i = 0; i < held.length && budget.remainingMs > 0; i++) {
      const at = (first + i) % held.length;
      if (!toPrune.busy.has(held[at]!.shard)) continue;
      const pruned = await this.pruneShard(held[at]!, budget);
      results[at]!.prunedJobs = pruned.prunedJobs;
      results[at]!.refused ||= pruned.refused;
    }
    // The held shards' tenants' live-job counts, folded to one row each so the quota's read stays short. Not
    // fenced: a fold is exact whoever runs it, even two at once (sql.compactLiveJobCounts). A failed fold is tried
    // again next round and does not stop this one.
    if (held.length) {
      try {
        this.count("live_job_counts_folded", await sql.compactLiveJobCounts(this.pool, held.map((l) => l.shard), this.config.batch));
      } catch (err) {
        this.logger.warn({ err }, "could not fold the live-job counts this round");
      }
    }
    // The deployment-wide part: whoever holds shard 0 (one scheduler at a time, fenced by that lease).
    const lowest = held.find((l) => l.shard === 0);
    if (lowest) await this.runGlobal(lowest);
    return results;
  }

  /**
   * Counts the shard's finished jobs into job_minute_stats (sql.rollUpFinishedJobs): per batch one fenced
   * transaction that locks the shard's watermark, counts the jobs between it and the next bound, and moves
   * it there, so every job is counted once whoever holds the shard. At most maxBatchesPerRound batches.
   */
  async rollUpShard(lease: HeldLease): Promise<{ rolledUpJobs: number; refused: boolean }> {
    const { batch } = this.config;
    let rolledUpJobs = 0;
    for (let round = 0; round < this.config.maxBatchesPerRound; round++) {
      const rolled = await this.fence(lease, async (client) => {
        const through = await sql.lockRollupWatermark(client, lease.shard);
        return sql.rollUpFinishedJobs(client, lease.shard, through, batch);
      });
      if (!rolled.ok) return { rolledUpJobs, refused: true };
      rolledUpJobs += rolled.value.jobs;
      this.count("rollup_rows_written", rolled.value.rows);
      if (rolled.value.jobs < batch) break;
    }
    this.count("jobs_rolled_up", rolledUpJobs);
    return { rolledUpJobs, refused: false };
  }

  /**
   * Once per database minute per shard: samples every queue's live figures of the shard's tenants into
   * queue_minute_gauges, then deletes the shard's rollup rows past retention (greatest(the tenant's
   * retention, 8 days)). When the sample is due is kept in memory, translated to this process's clock by
   * the offset seen at the last sample; a scheduler that takes the shard over samples at once (the
   * sample of a minute overwrites an earlier one).
   */
  async sampleGauges(lease: HeldLease): Promise<{ sampled: boolean; refused: boolean }> {
    if (Date.now() < (this.nextGaugeSampleAt.get(lease.shard) ?? 0)) return { sampled: false, refused: false };
    const sampled = await this.fence(lease, (client) => sql.sampleQueueGauges(client, lease.shard));
    if (!sampled.ok) return { sampled: false, refused: true };
    const { rows, minute, now } = sampled.value;
    this.nextGaugeSampleAt.set(lease.shard, Date.now() + (minute.getTime() + 60_000 - now.getTime()));
    this.count("gauge_rows_sampled", rows);
    for (let round = 0; round < this.config.maxBatchesPerRound; round++) {
      const pruned = await this.fence(lease, (client) => sql.pruneRollups(client, lease.shard, this.config.retentionMaxDays, this.config.batch));
      if (!pruned.ok) return { sampled: true, refused: true };
      this.count("rollup_rows_deleted", pruned.value);
      if (pruned.value < this.config.batch) break;
    }
    return { sampled: true, refused: false };
  }

  /** Moves the shard's finished jobs (and their attempts) to history, at most maxBatchesPerRound batches. */
  async archiveShard(lease: HeldLease): Promise<MaintenanceResult> {
    const { batch } = this.config;
    const result: MaintenanceResult = { rolledUpJobs: 0, archivedJobs: 0, archivedAttempts: 0, prunedJobs: 0, refused: false };
    for (let round = 0; round < this.config.maxBatchesPerRound; round++) {
      const moved = await this.fence(lease, async (client) => {
        const picked = await sql.lockArchivableJobs(client, lease.shard, this.config.archiveAfterMs, batch);
        if (picked.length === 0) return { jobs: 0, attempts: 0, partitions: 0 };
        const partitions = await sql.ensureHistoryPartitionsFor(client, picked.map((p) => p.day));
        return { ...(await sql.moveJobsToHistory(client, picked.map((p) => p.id))), partitions };
      });
      if (!moved.ok) return { ...result, refused: true };
      result.archivedJobs += moved.value.jobs;
      result.archivedAttempts += moved.value.attempts;
      this.count("partitions_created", moved.value.partitions);
      if (moved.value.jobs < batch) break;
    }
    this.count("jobs_archived", result.archivedJobs);
    this.count("attempts_archived", result.archivedAttempts);
    return result;
  }

  /**
   * Deletes the shard's tenants' expired history in batches while `budget` has time left (each batch's
   * duration is taken from it), at most maxBatchesPerRound batches.
   */
  async pruneShard(lease: HeldLease, budget: PruneBudget): Promise<{ prunedJobs: number; refused: boolean }> {
    const { batch } = this.config;
    let prunedJobs = 0;
    for (let round = 0; round < this.config.maxBatchesPerRound && budget.remainingMs > 0; round++) {
      const started = performance.now();
      const pruned = await this.fence(lease, (client) => sql.pruneHistoryOfShard(client, lease.shard, this.config.retentionMaxDays, batch));
      budget.remainingMs -= performance.now() - started;
      if (!pruned.ok) return { prunedJobs, refused: true };
      prunedJobs += pruned.value.jobs;
      this.count("history_attempts_deleted", pruned.value.attempts);
      if (pruned.value.jobs < batch) break;
    }
    this.count("history_jobs_deleted", prunedJobs);
    return { prunedJobs, refused: false };
  }

  /** The deployment-wide part, run by the holder of the lowest shard, fenced by that shard's lease. */
  async runGlobal(lease: HeldLease): Promise<{ refused: boolean }> {
    const { batch, retentionMaxDays } = this.config;
    const steps: [string, (client: pg.PoolClient) => Promise<number>][] = [
      ["partitions_created", (c) => sql.ensureHistoryPartitions(c, 1, this.config.partitionsAheadDays)],
      [
        "partitions_dropped",
        async (c) => {
          const dropped = await sql.dropExpiredHistoryPartitions(c, retentionMaxDays);
          if (dropped.length) this.logger.info({ dropped }, "dropped history partitions past the retention ceiling");
          return dropped.length;
        },
      ],
      ["idempotency_keys_released", (c) => sql.pruneIdempotencyKeys(c, batch)],
      ["outbox_deleted", (c) => sql.prunePublishedOutbox(c, this.config.outboxKeepMs, batch)],
      ["webhook_deliveries_deleted", (c) => sql.pruneWebhookDeliveries(c, retentionMaxDays, batch)],
      ["debounce_windows_deleted", (c) => sql.pruneDebounceWindows(c, DEBOUNCE_WINDOW_KEEP_MS, batch)],
      ["flow_key_state_deleted", (c) => sql.pruneIdleFlowKeys(c, batch)],
    ];
    for (const [task, step] of steps) {
      for (let round = 0; round < this.config.maxBatchesPerRound; round++) {
        const done = await this.fence(lease, step);
        if (!done.ok) return { refused: true };
        this.count(task, done.value);
        if (task.startsWith("partitions") || done.value < batch) break;
      }
    }
    const backlog = await sql.maintenanceBacklog(this.pool, this.config.archiveAfterMs, 100_000);
    this.metrics.maintenanceBacklog.set({ kind: "jobs_to_archive" }, backlog.archivable);
    this.metrics.maintenanceBacklog.set({ kind: "published_outbox" }, backlog.publishedOutbox);
    const holds = new Map((await sql.flowKeyHolds(this.pool)).map((h) => [h.reason, h]));
    for (const reason of ["key_paused", "key_at_cap", "key_over_rate"] as const) {
      this.metrics.flowKeyHeldJobs.set({ reason }, holds.get(reason)?.jobs ?? 0);
      this.metrics.flowKeysHolding.set({ reason }, holds.get(reason)?.keys ?? 0);
    }
    return { refused: false };
  }
}
