import { Redis } from "ioredis";
import { createPool, pingDatabase } from "@tick/db";
import { runService } from "@tick/runtime";
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
    const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null, lazyConnect: true });
    redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
    redis.connect().catch(() => {}); // readiness reports it; ioredis keeps reconnecting

    return {
      checks: { database: () => pingDatabase(pool), redis: async () => void (await redis.ping()) },
      stop: [
        { name: "close redis", run: async () => void (await redis.quit().catch(() => redis.disconnect())) },
        { name: "close database pool", run: () => pool.end() },
      ],
      info: { schedulerId: env.SCHEDULER_ID, shards: env.TICK_SHARDS, region: env.TICK_REGION },
    };
  },
});
