import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import type { ReadinessCheck } from "./health-server.js";
import type { ShutdownStep } from "./shutdown.js";

/**
 * A Redis connection for a long-running process: connects in the background (readiness reports it
 * while it is down) and keeps reconnecting; errors are logged, never thrown into the event loop.
 * By default commands wait for a reconnect (`maxRetriesPerRequest: null`, which BullMQ requires);
 * `failFast` makes a command fail after one retry instead, for request paths that must answer.
 */
export function createRedis(target: string | RedisTarget, logger: Logger, options: { failFast?: boolean; commandTimeoutMs?: number; clientName?: string } = {}): Redis {
  const common: RedisOptions = {
    maxRetriesPerRequest: options.failFast ? 1 : null,
    lazyConnect: true,
    // CLIENT LIST on a Redis node shows which app each connection is.
    ...(options.clientName ? { connectionName: options.clientName } : {}),
    // A primary demoted to a replica under the connection (a failover behind one address, or Sentinel's) answers
    // READONLY: reconnect, to whatever the address or the sentinels name now.
    reconnectOnError: (err) => err.message.startsWith("READONLY"),
    ...(options.commandTimeoutMs ? { commandTimeout: options.commandTimeoutMs } : {}),
  };
  const t = typeof target === "string" ? { url: target } : target;
  const redis = t.sentinels ? new Redis({ ...sentinelOptions(t), ...common }) : new Redis(t.url, common);
  redis.on("error", (err) => logger.warn({ err: err.message }, "redis connection error"));
  redis.connect().catch(() => {});
  return redis;
}

/**
 * Where Redis is: a URL, or (with sentinels) the sentinels that name the current primary. baseEnvShape's
 * REDIS_URL, REDIS_SENTINELS, REDIS_SENTINEL_MASTER and REDIS_SENTINEL_PASSWORD make one: redisTarget(env).
 */
export interface RedisTarget {
  /** The server; with sentinels, only its user, password, database number and scheme apply. */
  url: string;
  sentinels?: SentinelAddress[] | undefined;
  /** The name the sentinels monitor the primary under. */
  masterName?: string | undefined;
  sentinelPassword?: string | undefined;
}

export interface SentinelAddress {
  host: string;
  port: number;
}

/** The Redis variables of baseEnvShape, parsed. */
export interface RedisEnv {
  REDIS_URL: string;
  REDIS_SENTINELS?: SentinelAddress[] | undefined;
  REDIS_SENTINEL_MASTER?: string;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
}

/** The RedisTarget an app's parsed env describes. */
export function redisTarget(env: RedisEnv): RedisTarget {
  return { url: env.REDIS_URL, sentinels: env.REDIS_SENTINELS, masterName: env.REDIS_SENTINEL_MASTER, sentinelPassword: env.REDIS_SENTINEL_PASSWORD };
}

/**
 * ioredis' Sentinel options for a target: the client asks the sentinels for the primary on every (re)connect,
 * checks that the node it reached is the primary, and with failoverDetector also listens to the sentinels'
 * +switch-master so a promotion moves it at once rather than at its next connection error (createRedis also
 * reconnects on READONLY, a primary demoted under the connection).
 */
export function sentinelOptions(target: RedisTarget): RedisOptions {
  const url = new URL(target.url);
  const db = Number(url.pathname.replace(/^\//, "") || 0);
  return {
    sentinels: target.sentinels,
    name: target.masterName ?? "mymaster",
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(Number.isInteger(db) && db > 0 ? { db } : {}),
    ...(url.protocol === "rediss:" ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    failoverDetector: true,
  };
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
export function appStores<P extends Pingable>(pool: P, target: string | RedisTarget, logger: Logger, clientName?: string) {
  const named = clientName ? { clientName } : {};
  const redis = createRedis(target, logger, named);
  const indexRedis = createRedis(target, logger, { failFast: true, commandTimeoutMs: 500, ...named });
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
