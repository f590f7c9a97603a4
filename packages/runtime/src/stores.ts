import { Redis } from "ioredis";
import type { Logger } from "pino";
import type { ReadinessCheck } from "./health-server.js";
import type { ShutdownStep } from "./shutdown.js";

/**
 * A Redis connection for a long-running process: connects in the background (readiness reports it
 * while it is down) and keeps reconnecting; errors are logged, never thrown into the event loop.
 * By default commands wait for a reconnect (`maxRetriesPerRequest: null`, which BullMQ requires);
 * `failFast` makes a command fail after one retry instead, for request paths that must answer.
 */
export function createRedis(url: string, logger: Logger, options: { failFast?: boolean; commandTimeoutMs?: number } = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: options.failFast ? 1 : null,
    lazyConnect: true,
    ...(options.commandTimeoutMs ? { commandTimeout: options.commandTimeoutMs } : {}),
  });
  redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
  redis.connect().catch(() => {});
  return redis;
}

/** A Postgres pool as far as readiness and shutdown need it. */
export interface Pingable {
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

/** Readiness checks and shutdown steps for a process's Postgres pool and Redis connection. */
export function storeLifecycle(pool: Pingable, redis: Redis): { checks: Record<string, ReadinessCheck>; stop: ShutdownStep[] } {
  return {
    checks: {
      database: async () => void (await pool.query("SELECT 1")),
      redis: async () => void (await redis.ping()),
    },
    stop: [
      { name: "close redis", run: async () => void (await redis.quit().catch(() => redis.disconnect())) },
      { name: "close database pool", run: () => pool.end() },
    ],
  };
}

/**
 * What a long-running app needs to talk to its stores: a pool (made by the caller, from @tick/db), a
 * BullMQ connection that waits through reconnects, and a fail-fast connection for the due index and
 * breakers (so a Redis outage degrades to polling instead of hanging), with readiness checks and
 * shutdown steps for all three.
 */
export function appStores<P extends Pingable>(pool: P, redisUrl: string, logger: Logger) {
  const redis = createRedis(redisUrl, logger);
  const indexRedis = createRedis(redisUrl, logger, { failFast: true, commandTimeoutMs: 500 });
  const lifecycle = storeLifecycle(pool, redis);
  return {
    pool,
    redis,
    indexRedis,
    checks: lifecycle.checks,
    /** Run after the app's own stop steps. */
    stop: [{ name: "close due-index redis", run: () => void indexRedis.disconnect() }, ...lifecycle.stop],
  };
}
