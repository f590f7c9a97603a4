import { createRequire } from "node:module";
import { createPool, sql } from "@tick/db";
import { MetricLabels, metricLabelConfig, runService } from "@tick/runtime";
import { loadWorkerEnv } from "./env.js";
import { startNodeHeartbeat } from "./node-heartbeat.js";
import { createAttemptWorker } from "./worker.js";

// Composition root: the only place that reads process.env and wires instances.
void runService({
  name: "worker",
  // src/ and dist/ both sit beside package.json.
  version: (createRequire(import.meta.url)("../package.json") as { version: string }).version,
  rawEnv: process.env,
  loadEnv: loadWorkerEnv,
  identity: (env) => ({ id: env.WORKER_ID, healthPort: env.WORKER_HEALTH_PORT, dbPoolSize: env.WORKER_DB_POOL_SIZE }),
  createPool,
  databaseNow: (pool) => sql.databaseNow(pool),
  start: async ({ env, deps }) => {
    const worker = createAttemptWorker({
      ...deps,
      metricLabels: new MetricLabels(metricLabelConfig(env)),
      config: {
        id: env.WORKER_ID,
        redisPrefix: env.TICK_REDIS_PREFIX,
        concurrency: env.WORKER_CONCURRENCY,
        leaseMs: env.WORKER_LEASE_TTL,
        heartbeatMs: env.WORKER_HEARTBEAT_INTERVAL,
        batchLingerMs: env.WORKER_BATCH_LINGER,
        allowedCidrs: env.TICK_SSRF_ALLOWED_CIDRS,
        maxResponseBytes: env.WORKER_MAX_RESPONSE_BYTES,
        shutdownGraceMs: env.WORKER_SHUTDOWN_GRACE,
        webhookRetryBaseMs: env.WORKER_WEBHOOK_RETRY_BASE,
        webhookMaxTries: env.WORKER_WEBHOOK_MAX_TRIES,
        breakerMetricsIntervalMs: env.WORKER_BREAKER_METRICS_INTERVAL,
        breaker: {
          windowMs: env.BREAKER_WINDOW,
          minRequests: env.BREAKER_MIN_REQUESTS,
          failureRate: env.BREAKER_FAILURE_RATE,
          openMs: env.BREAKER_OPEN_FOR,
          retryBudget: env.BREAKER_RETRY_BUDGET,
        },
      },
    });
    worker.start();
    // The status page's row (every WORKER_HEARTBEAT_INTERVAL, like the attempt leases), removed after the drain.
    const heartbeat = deps.node ? startNodeHeartbeat({ db: deps.pool, node: deps.node, logger: deps.logger, intervalMs: env.WORKER_HEARTBEAT_INTERVAL }) : null;
    return {
      stop: {
        name: "stop taking messages, drain in-flight attempts",
        run: async () => {
          await worker.stop();
          await heartbeat?.stop();
        },
      },
      info: { concurrency: env.WORKER_CONCURRENCY },
    };
  },
});
