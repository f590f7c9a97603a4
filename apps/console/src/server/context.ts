import type { Redis } from "ioredis";
import { createPool, createPrismaClient, type PrismaClient } from "@tick/db";
import { createLogger, createMetricsRegistry, createRedis, MetricLabels, metricLabelConfig, redisTarget, type Logger } from "@tick/runtime";
import type pg from "pg";
import { getEnv } from "./env";
import { createConsoleMetrics, type ConsoleMetrics } from "./metrics";

export interface ConsoleContext {
  prisma: PrismaClient;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  /** The console's registry and metrics (served on CONSOLE_METRICS_PORT by server/metrics-server.ts). */
  metrics: ConsoleMetrics;
}

// Kept on globalThis so `next dev` hot reloads do not open a new pool per edit.
const holder = globalThis as unknown as { __tickConsole?: ConsoleContext };

/** Lazily wired shared clients (never at module load: `next build` imports routes without a database). */
export function getContext(): ConsoleContext {
  if (!holder.__tickConsole) {
    const env = getEnv();
    const logger = createLogger({ name: "console", level: env.LOG_LEVEL });
    const redis = createRedis(redisTarget(env), logger, { failFast: true, commandTimeoutMs: 1_000, clientName: "tick-console" });
    holder.__tickConsole = {
      prisma: createPrismaClient(env.DATABASE_URL),
      pool: createPool(env.DATABASE_URL, { applicationName: "tick-console", connectionTimeoutMillis: 3_000 }),
      redis,
      logger,
      metrics: createConsoleMetrics(createMetricsRegistry("console"), new MetricLabels(metricLabelConfig(env))),
    };
  }
  return holder.__tickConsole;
}
