import { createPool } from "@tick/db";
import { appStores, parseFaultPoints, runService } from "@tick/runtime";
import { loadWorkerEnv } from "./env.js";
import { createAttemptWorker } from "./worker.js";

// Composition root: the only place that reads process.env and wires instances.
void runService({
  name: "worker",
  rawEnv: process.env,
  loadEnv: loadWorkerEnv,
  healthPort: (env) => env.WORKER_HEALTH_PORT,
  start: async ({ env, logger, registry }) => {
    const stores = appStores(
      createPool(env.DATABASE_URL, { max: env.WORKER_DB_POOL_SIZE, applicationName: `tick-worker ${env.WORKER_ID}` }),
      env.REDIS_URL,
      logger,
    );
    const { pool, redis, indexRedis } = stores;
    const worker = createAttemptWorker({
      pool,
      redis,
      indexRedis,
      logger,
      registry,
      faults: parseFaultPoints(env.TICK_FAULT_POINTS),
      config: {
        id: env.WORKER_ID,
        redisPrefix: env.TICK_REDIS_PREFIX,
        concurrency: env.WORKER_CONCURRENCY,
        leaseMs: env.WORKER_LEASE_TTL,
        heartbeatMs: env.WORKER_HEARTBEAT_INTERVAL,
        allowedCidrs: env.TICK_SSRF_ALLOWED_CIDRS,
        maxResponseBytes: env.WORKER_MAX_RESPONSE_BYTES,
        shutdownGraceMs: env.WORKER_SHUTDOWN_GRACE,
        webhookRetryBaseMs: env.WORKER_WEBHOOK_RETRY_BASE,
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
    return {
      checks: stores.checks,
      stop: [{ name: "stop taking messages, drain in-flight attempts", run: () => worker.stop() }, ...stores.stop],
      info: { workerId: env.WORKER_ID, concurrency: env.WORKER_CONCURRENCY, region: env.TICK_REGION },
    };
  },
});
