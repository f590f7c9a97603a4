import { createPool } from "@tick/db";
import { createRedis, runService, storeLifecycle } from "@tick/runtime";
import { loadWorkerEnv } from "./env.js";

// Composition root: the only place that reads process.env and wires instances.
void runService({
  name: "worker",
  rawEnv: process.env,
  loadEnv: loadWorkerEnv,
  healthPort: (env) => env.WORKER_HEALTH_PORT,
  start: async ({ env, logger }) => {
    const pool = createPool(env.DATABASE_URL, { max: env.WORKER_DB_POOL_SIZE, applicationName: `tick-worker ${env.WORKER_ID}` });
    const redis = createRedis(env.REDIS_URL, logger);
    return {
      ...storeLifecycle(pool, redis),
      info: { workerId: env.WORKER_ID, concurrency: env.WORKER_CONCURRENCY, region: env.TICK_REGION },
    };
  },
});
