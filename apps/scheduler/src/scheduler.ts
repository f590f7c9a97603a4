import type pg from "pg";
import { Queue } from "bullmq";
import { ATTEMPT_QUEUE, WEBHOOK_QUEUE } from "@tick/core";
import { createBreakers, heldByTenant } from "@tick/breaker";
import { createDueIndex } from "@tick/due-index";
import { sql } from "@tick/db";
import { NO_FAULTS, type Logger, type MetricLabels, type ServiceDeps } from "@tick/runtime";
import { Dispatcher } from "./dispatch/dispatcher.js";
import { DueTenantSource } from "./dispatch/due-tenant-source.js";
import { RateLimiter } from "./dispatch/rate-limiter.js";
import { ShardLeaseManager, type HeldLease } from "./leases/shard-lease-manager.js";
import type { ShardRegions } from "./leases/shard-regions.js";
import { createSchedulerMetrics, type SchedulerMetrics } from "./metrics.js";
import { OutboxRelay, dispatchMessageState } from "./outbox/outbox-relay.js";
import { Reaper } from "./reaper/reaper.js";
import { Maintenance } from "./maintenance/maintenance.js";
import { QueueGaugeMetrics } from "./maintenance/queue-gauge-metrics.js";
import { Materializer } from "./recurrence/materializer.js";
import { ReplayProgressMetrics } from "./replay/replay-progress-metrics.js";
import { Replayer } from "./replay/replayer.js";

export interface SchedulerConfig {
  id: string;
  region: string;
  redisPrefix: string;
  shardCount: number;
  /** Home regions of shards (TICK_SHARD_REGIONS, S18); absent or empty: no preference. */
  shardRegions?: ShardRegions;
  leaseTtlMs: number;
  leaseRenewIntervalMs: number;
  dispatchIntervalMs: number;
  /** Wait between rounds while due work is left (default 5 ms). */
  dispatchBusyIntervalMs?: number;
  /** Most attempts per broker message (default 100). */
  dispatchChunk?: number;
  dispatchBatch: number;
  maxQueuedPerShard: number;
  dispatchRatePerSecond: number;
  relayRatePerSecond: number;
  reaperIntervalMs: number;
  leaseGraceMs: number;
  strandedAfterMs: number;
  /** A broker publish not answered within this counts as failed (rows retried later). */
  publishTimeoutMs: number;
  /** How often the due index is compared with Postgres and repaired. */
  reconcileIntervalMs: number;
  /** Schedule occurrences are turned into jobs this long before they are due. */
  recurrenceLookaheadMs: number;
  recurrenceIntervalMs: number;
  /** Held shards materialised at once (default 2). */
  recurrenceConcurrency?: number;
  /** Schedules per shard per materialisation round (default 1,000). */
  recurrenceBatch?: number;
  idempotencyTtlMs: number;
  /** How often each held shard's DLQ replays are tallied and released. */
  replayIntervalMs: number;
  /** Data lifecycle; defaults in MAINTENANCE_DEFAULTS. */
  maintenance?: Partial<typeof MAINTENANCE_DEFAULTS>;
}

const MAINTENANCE_DEFAULTS = {
  intervalMs: 1_000,
  archiveAfterMs: 60_000,
  batch: 1_000,
  maxBatchesPerRound: 10,
  retentionMaxDays: 90,
  outboxKeepMs: 60_000,
  partitionsAheadDays: 3,
  pruneBudgetMs: 100,
};

export interface SchedulerDeps extends ServiceDeps<pg.Pool> {
  config: SchedulerConfig;
  /** Bounds the tenant and queue labels of the metrics (TICK_METRICS_*; defaults when absent). */
  metricLabels?: MetricLabels;
}

/** How often the per-queue gauges are read back from the maintenance loop's per-minute sample. */
const QUEUE_GAUGES_INTERVAL_MS = 15_000;

const STALL_WARNING_MS = 15_000;

/** A tenant due this recently when a dispatch round ends is dispatched again at once, not at the next poll. */
const RECENTLY_DUE_MS = 50;

/**
 * A dispatched attempt not started this long after its publication has its message looked up in the
 * broker (workers start a message within milliseconds unless the queue is backed up, and a backed-up
 * one is still deliverable): long enough not to look up every fresh message, short enough that a
 * message consumed while Postgres was down is re-published within a reaper round of the recovery.
 */
const UNSTARTED_CHECK_AFTER_MS = 2_000;

/** Runs fn over items, at most `limit` at once; rejects with the first error once every started call has settled. */
export async function forEachConcurrently<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const lane = async () => {
    while (next < items.length && !failure) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  if (failure) throw failure.error;
}

/**
 * A loop that runs `step` every `intervalMs` (sooner when woken), never overlapping itself. A step that
 * knows better (the dispatcher: work is left, or the next job falls due sooner) returns `{ nextInMs }`.
 */
class Loop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private active = false;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly step: () => Promise<unknown>,
    private readonly logger: Logger,
    private readonly metrics: Pick<SchedulerMetrics, "loopRuns">,
  ) {}

  private nextDelay(result: unknown): number {
    const next = (result as { nextInMs?: unknown } | undefined)?.nextInMs;
    return typeof next === "number" && Number.isFinite(next) ? Math.max(0, Math.min(this.intervalMs, next)) : this.intervalMs;
  }

  start(): void {
    this.active = true;
    this.schedule(0);
  }

  wake(): void {
    if (this.active && !this.running) this.schedule(0);
  }

  async stop(): Promise<void> {
    this.active = false;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delay: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      // A step that never ends would stop this loop while the lease loop keeps the shards: say so loudly.
      const started = performance.now();
      const watchdog = setInterval(
        () => this.logger.error({ loop: this.name, runningMs: Math.round(performance.now() - started) }, "scheduler loop step has not finished (stalled?)"),
        STALL_WARNING_MS,
      );
      let delay = this.intervalMs;
      this.running = this.step()
        .then((result) => {
          delay = this.nextDelay(result);
          this.metrics.loopRuns.inc({ loop: this.name, outcome: "ok" });
        })
        .catch((err) => {
          this.metrics.loopRuns.inc({ loop: this.name, outcome: "error" });
          this.logger.error({ err, loop: this.name }, "scheduler loop step failed");
        })
        .finally(() => {
          clearInterval(watchdog);
          this.running = undefined;
          if (this.active) this.schedule(delay);
        });
    }, delay);
  }
}

/**
 * The scheduler process's parts, wired: shard leases, fair dispatch, outbox relay and reaper, each a
 * loop. Tests drive the same parts step by step (`leaseTick`, `dispatchOnce`, ...) and can pause the
 * loops to play a scheduler frozen by a GC pause or SIGSTOP (S8).
 */
export function createScheduler(deps: SchedulerDeps) {
  const { pool, redis, logger, config } = deps;
  const faults = deps.faults ?? NO_FAULTS;
  const metrics = createSchedulerMetrics(deps.registry, deps.metricLabels);
  metrics.shardCount.set(config.shardCount);
  const connection = { connection: redis, prefix: `${config.redisPrefix}:bull` };
  const queues = { dispatch: new Queue(ATTEMPT_QUEUE, connection), webhook: new Queue(WEBHOOK_QUEUE, connection) };
  let lastQueueError = 0;
  for (const queue of Object.values(queues)) {
    queue.on("error", (err) => {
      if (Date.now() - lastQueueError < 10_000) return; // one line per 10 s while the broker is down
      lastQueueError = Date.now();
      logger.warn({ err: err.message }, "broker connection error");
    });
  }
  const leases = new ShardLeaseManager(
    pool,
    {
      holder: config.id,
      region: config.region,
      shardCount: config.shardCount,
      ttlMs: config.leaseTtlMs,
      ...(config.shardRegions ? { shardRegions: config.shardRegions } : {}),
      ...(deps.node ? { status: (shards) => ({ version: deps.node!.version, healthUrl: deps.node!.healthUrl, startedAt: deps.node!.startedAt, dueIndex: dueSource.modesOf(shards) }) } : {}),
    },
    logger,
    metrics,
  );
  const dispatchRate = new RateLimiter(0);
  const relayRate = new RateLimiter(config.relayRatePerSecond);
  const dueIndex = createDueIndex({ redis: deps.indexRedis, prefix: config.redisPrefix });
  const dueSource = new DueTenantSource(pool, dueIndex, { rebuildBatch: 500, maxTenants: 10_000 }, logger, metrics);
  const breakers = createBreakers({ redis: deps.indexRedis, prefix: config.redisPrefix });
  const dispatcher = new Dispatcher(
    pool,
    queues.dispatch,
    {
      holder: config.id,
      batch: config.dispatchBatch,
      maxQueuedPerShard: config.maxQueuedPerShard,
      chunkSize: config.dispatchChunk ?? 100,
      publishTimeoutMs: config.publishTimeoutMs,
    },
    dispatchRate,
    dueSource,
    logger,
    metrics,
    faults,
    async () => heldByTenant(await breakers.openDependencies()),
    deps.tracing,
  );
  const relay = new OutboxRelay(pool, queues, { batch: 500, retryDelayMs: 500, maxRetryDelayMs: 30_000, publishTimeoutMs: config.publishTimeoutMs }, relayRate, logger, metrics, faults);
  const reaper = new Reaper(
    pool,
    { holder: config.id, leaseGraceMs: config.leaseGraceMs, strandedAfterMs: config.strandedAfterMs, unstartedCheckAfterMs: UNSTARTED_CHECK_AFTER_MS, batch: 500 },
    logger,
    metrics,
    (shard, tenantId, dueAtMs) => dueIndex.noteDue(shard, tenantId, dueAtMs).catch(() => {}),
    async (attempt) => (await dispatchMessageState(queues.dispatch, attempt.id, attempt.message_id)).deliverable,
  );

  const materializer = new Materializer(
    pool,
    // Schedules per shard per round: planned in code, written with two statements whatever the count.
    { holder: config.id, lookaheadMs: config.recurrenceLookaheadMs, idempotencyTtlMs: config.idempotencyTtlMs, batch: config.recurrenceBatch ?? 1_000 },
    logger,
    metrics,
    (shard, tenantId, dueAtMs) => dueIndex.noteDue(shard, tenantId, dueAtMs),
  );

  const replayer = new Replayer(
    pool,
    { holder: config.id, horizonMs: 1_000, batch: 500, inFlightSeconds: 10 },
    logger,
    metrics,
    (shard, tenantId, dueAtMs) => dueIndex.noteDue(shard, tenantId, dueAtMs),
    async () => heldByTenant(await breakers.openDependencies()),
  );

  const maintenanceConfig = { ...MAINTENANCE_DEFAULTS, ...config.maintenance };
  const maintenance = new Maintenance(pool, { holder: config.id, ...maintenanceConfig }, logger, metrics);
  const queueGauges = new QueueGaugeMetrics(pool, metrics);
  const replayProgress = new ReplayProgressMetrics(metrics);

  let held: HeldLease[] = [];
  const leaseTick = async () => {
    const before = held;
    held = await leases.tick();
    metrics.shardsHeld.set(held.length);
    for (const lease of held) metrics.shardEpoch.set({ shard: String(lease.shard) }, Number(lease.epoch));
    // A shard given up takes its per-shard series with it: its new holder reports it.
    const kept = new Set(held.map((l) => l.shard));
    for (const gone of before.filter((l) => !kept.has(l.shard))) {
      const labels = { shard: String(gone.shard) };
      for (const gauge of [metrics.shardEpoch, metrics.dueIndexMode, metrics.dueTenants, metrics.dueIndexTenants]) gauge.remove(labels);
    }
    // This process's share of the global dispatch rate follows the share of shards it holds.
    const rate = (config.dispatchRatePerSecond * held.length) / config.shardCount;
    dispatchRate.setRate(rate);
    metrics.dispatchRateLimit.set(rate);
    return held;
  };
  /**
   * One round over the held shards; `more`: some shard has due work it could not take yet, `retryInMs` the
   * soonest any of those is worth another round (undefined: at once, after the busy interval).
   */
  const dispatchRound = async () => {
    let claimed = 0;
    let more = false;
    let retryInMs: number | undefined = Infinity;
    // Only shards with due work (or no built index) get a round: an idle shard costs nothing.
    const visit = new Set(await dueSource.shardsToVisit(held.map((l) => l.shard)));
    for (const lease of held) {
      if (!visit.has(lease.shard)) continue;
      const round = await dispatcher.runShard(lease);
      claimed += round.claimed;
      if (!round.more) continue;
      more = true;
      retryInMs = round.retryInMs === undefined || retryInMs === undefined ? undefined : Math.min(retryInMs, round.retryInMs);
    }
    return { claimed, more, retryInMs };
  };
  const dispatchOnce = async () => (await dispatchRound()).claimed;
  /**
   * The dispatch loop's step: work left → again after the busy interval; else sleep until the
   * earliest due time the index lists (the poll interval caps it: jobs the index has not heard of yet).
   */
  const dispatchStep = async () => {
    const { more, retryInMs } = await dispatchRound();
    if (more) return { nextInMs: Math.max(config.dispatchBusyIntervalMs ?? 5, retryInMs ?? 0) };
    // A job that fell due while this round ran (within 50 ms) is taken at once (1 ms: never a hot spin);
    // a tenant listed as due for longer is held by its caps and waits for the poll.
    const untilDue = await dueSource.msUntilNextDue(held.map((l) => l.shard), RECENTLY_DUE_MS);
    return { nextInMs: untilDue === null ? config.dispatchIntervalMs : Math.max(1, untilDue) };
  };
  const relayOnce = async () => {
    // The backlog gauge's count first: with nothing unpublished (the common case: dispatches go out
    // right after their claim) a poll is this one statement, not a transaction of three (idle CPU).
    if ((await relay.refreshBacklogMetrics()).count === 0) return 0;
    let total = 0;
    for (let n = await relay.runOnce(); n > 0; n = await relay.runOnce()) total += n;
    await relay.refreshBacklogMetrics();
    return total;
  };
  const materialize = async () => {
    let created = 0;
    let more = false;
    const due = await sql.shardsWithDueSchedules(pool, held.map((l) => l.shard), config.recurrenceLookaheadMs);
    // Shards in parallel, a few at a time: one shard's transaction is mostly Postgres inserting its
    // occurrence jobs, so one at a time would keep a single backend busy while the other cores idle.
    await forEachConcurrently(held.filter((lease) => due.has(lease.shard)), config.recurrenceConcurrency ?? 2, async (lease) => {
      const round = await materializer.runShard(lease);
      created += round.created;
      more ||= round.more;
    });
    if (created > 0) dispatchLoop.wake();
    return { created, more };
  };
  const materializeOnce = async () => (await materialize()).created;
  // A burst larger than a batch per shard goes on at once rather than a poll interval later.
  const materializeStep = async () => ((await materialize()).more ? { nextInMs: 0 } : undefined);
  const reconcileOnce = async () => {
    let repaired = 0;
    for (const lease of held) repaired += await dueSource.reconcile(lease.shard);
    return repaired;
  };
  const replayOnce = async () => {
    let released = 0;
    const open = await sql.shardsWithOpenReplays(pool, held.map((l) => l.shard));
    for (const lease of held) {
      if (!open.has(lease.shard)) continue;
      const round = await replayer.runShard(lease);
      released += round.released;
      if (round.leaseHeld) replayProgress.record(lease.shard, round.progress);
    }
    // Shards without open replays (or no longer held) have nothing to show.
    replayProgress.keepOnly(held.filter((l) => open.has(l.shard)).map((l) => l.shard));
    return released;
  };
  let queueGaugesAt = -Infinity;
  const refreshQueueGauges = () => {
    queueGaugesAt = performance.now();
    return queueGauges.refresh(held.map((l) => l.shard));
  };
  const maintainOnce = async () => {
    const results = await maintenance.runRound(held);
    metrics.maintenanceLastRound.set(Date.now() / 1000);
    // The queue figures the round sampled (once a minute per shard), exported as gauges.
    if (performance.now() - queueGaugesAt >= QUEUE_GAUGES_INTERVAL_MS) await refreshQueueGauges();
    return results;
  };
  const reapOnce = () => reaper.runRound(held);

  const leaseLoop = new Loop("leases", config.leaseRenewIntervalMs, leaseTick, logger, metrics);
  const dispatchLoop = new Loop("dispatch", config.dispatchIntervalMs, dispatchStep, logger, metrics);
  const relayLoop = new Loop("relay", Math.max(50, config.dispatchIntervalMs), relayOnce, logger, metrics);
  const reaperLoop = new Loop("reaper", config.reaperIntervalMs, reapOnce, logger, metrics);
  const reconcileLoop = new Loop("reconcile", config.reconcileIntervalMs, reconcileOnce, logger, metrics);
  const recurrenceLoop = new Loop("recurrence", config.recurrenceIntervalMs, materializeStep, logger, metrics);
  const replayLoop = new Loop("replay", config.replayIntervalMs, replayOnce, logger, metrics);
  const maintenanceLoop = new Loop("maintenance", maintenanceConfig.intervalMs, maintainOnce, logger, metrics);
  const loops = [leaseLoop, dispatchLoop, relayLoop, reaperLoop, reconcileLoop, recurrenceLoop, replayLoop, maintenanceLoop];

  return {
    metrics,
    queues,
    heldShards: () => held,
    leaseTick,
    dispatchOnce,
    relayOnce,
    reapOnce,
    reconcileOnce,
    materializeOnce,
    replayOnce,
    maintainOnce,
    /** Reads the latest per-minute queue sample of the held shards into the queue gauges (maintainOnce does it every 15 s). */
    refreshQueueGauges,
    dueIndex,
    /**
     * Its /readyz: ready while Postgres answers (the leases, the fence and every loop need it; a Redis outage
     * only moves dispatch to polling and holds publishing in the outbox, so it is not required; the due-index mode shows it),
     * with the shards it holds and how each finds due work.
     */
    readiness: (storeChecks: Record<string, () => Promise<void>>) => ({
      checks: { database: storeChecks.database! },
      about: () => ({ shards: held.map((l) => ({ shard: l.shard, epoch: l.epoch })), dueIndex: dueSource.modesOf(held.map((l) => l.shard)) }),
    }),
    async init() {
      await leases.init();
    },
    async start() {
      // Postgres may be unreachable at boot (a failover, a network blip): wait for it rather than exit.
      for (let delay = 250; ; delay = Math.min(delay * 2, 5_000)) {
        try {
          await leases.init();
          break;
        } catch (err) {
          logger.warn({ err: (err as Error).message, retryInMs: delay }, "cannot reach Postgres to set up shard leases; retrying");
          await new Promise((r) => setTimeout(r, delay));
        }
      }
      await leaseTick().catch((err) => logger.warn({ err: (err as Error).message }, "first lease round failed; the lease loop retries"));
      for (const loop of loops) loop.start();
    },
    /** Stops every loop without giving anything back: a frozen process, as far as others can tell. */
    async pause() {
      await Promise.all(loops.map((l) => l.stop()));
    },
    resume() {
      for (const loop of loops) loop.start();
    },
    /** Clean stop: loops end, shards are released for a follower, queues closed. */
    async stop() {
      await Promise.all(loops.map((l) => l.stop()));
      await leases.releaseAll().catch((err) => logger.warn({ err }, "releasing shard leases failed"));
      await Promise.all(Object.values(queues).map((q) => q.close()));
    },
  };
}

export type Scheduler = ReturnType<typeof createScheduler>;
