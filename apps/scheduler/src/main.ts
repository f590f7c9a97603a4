import { createPool } from "@tick/db";
import { createRedis, runService, storeLifecycle } from "@tick/runtime";
import { loadSchedulerEnv } from "./env.js";

// Composition root: the only place that reads process.env and wires instances.
void runService({
  name: "scheduler",
  rawEnv: process.env,
  loadEnv: loadSchedulerEnv,
  healthPort: (env) => env.SCHEDULER_HEALTH_PORT,
  start: async ({ env, logger }) => {
    const pool = createPool(env.DATABASE_URL, {
      max: env.SCHEDULER_DB_POOL_SIZE,
      applicationName: `tick-scheduler ${env.SCHEDULER_ID}`,
    });
    const redis = createRedis(env.REDIS_URL, logger);
    return {
      ...storeLifecycle(pool, redis),
      info: { schedulerId: env.SCHEDULER_ID, shards: env.TICK_SHARDS, region: env.TICK_REGION },
    };
  },
});
