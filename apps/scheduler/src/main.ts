import { createRequire } from "node:module";
import { createPool, sql } from "@tick/db";
import { MetricLabels, metricLabelConfig, runService } from "@tick/runtime";
import { loadSchedulerEnv } from "./env.js";
import { parseShardRegions } from "./leases/shard-regions.js";
import { createScheduler } from "./scheduler.js";

// Composition root: the only place that reads process.env and wires instances.
void runService({
  name: "scheduler",
  // src/ and dist/ both sit beside package.json.
  version: (createRequire(import.meta.url)("../package.json") as { version: string }).version,
  rawEnv: process.env,
  loadEnv: loadSchedulerEnv,
  identity: (env) => ({ id: env.SCHEDULER_ID, healthPort: env.SCHEDULER_HEALTH_PORT, dbPoolSize: env.SCHEDULER_DB_POOL_SIZE }),
  createPool,
  databaseNow: (pool) => sql.databaseNow(pool),
  start: async ({ env, deps }) => {
    const scheduler = createScheduler({
      ...deps,
      metricLabels: new MetricLabels(metricLabelConfig(env)),
      config: {
        id: env.SCHEDULER_ID,
        region: env.TICK_REGION,
        redisPrefix: env.TICK_REDIS_PREFIX,
        shardCount: env.TICK_SHARDS,
        shardRegions: parseShardRegions(env.TICK_SHARD_REGIONS, env.TICK_SHARDS),
        leaseTtlMs: env.SCHEDULER_LEASE_TTL,
        leaseRenewIntervalMs: env.SCHEDULER_LEASE_RENEW_INTERVAL,
        dispatchIntervalMs: env.SCHEDULER_DISPATCH_INTERVAL,
        dispatchBusyIntervalMs: env.SCHEDULER_DISPATCH_BUSY_INTERVAL,
        dispatchChunk: env.SCHEDULER_DISPATCH_CHUNK,
        dispatchBatch: env.SCHEDULER_DISPATCH_BATCH,
        maxQueuedPerShard: env.SCHEDULER_MAX_QUEUED_PER_SHARD,
        dispatchRatePerSecond: env.SCHEDULER_DISPATCH_RATE,
        relayRatePerSecond: env.SCHEDULER_RELAY_RATE,
        reaperIntervalMs: env.SCHEDULER_REAPER_INTERVAL,
        leaseGraceMs: env.SCHEDULER_LEASE_GRACE,
        strandedAfterMs: env.SCHEDULER_STRANDED_AFTER,
        publishTimeoutMs: env.SCHEDULER_PUBLISH_TIMEOUT,
        reconcileIntervalMs: env.SCHEDULER_RECONCILE_INTERVAL,
        recurrenceLookaheadMs: env.SCHEDULER_RECURRENCE_LOOKAHEAD,
        recurrenceIntervalMs: env.SCHEDULER_RECURRENCE_INTERVAL,
        recurrenceConcurrency: env.SCHEDULER_RECURRENCE_CONCURRENCY,
        replayIntervalMs: env.SCHEDULER_REPLAY_INTERVAL,
        maintenance: {
          intervalMs: env.SCHEDULER_MAINTENANCE_INTERVAL,
          batch: env.SCHEDULER_MAINTENANCE_BATCH,
          archiveAfterMs: env.TICK_ARCHIVE_AFTER,
          retentionMaxDays: env.TICK_RETENTION_MAX_DAYS,
          outboxKeepMs: env.TICK_OUTBOX_KEEP,
          pruneBudgetMs: env.SCHEDULER_PRUNE_BUDGET,
        },
        idempotencyTtlMs: env.TICK_IDEMPOTENCY_TTL,
      },
    });
    await scheduler.start();
    return {
      stop: { name: "stop scheduler (release shards)", run: () => scheduler.stop() },
      info: { shards: env.TICK_SHARDS, held: scheduler.heldShards().length },
      readiness: scheduler.readiness,
    };
  },
});
