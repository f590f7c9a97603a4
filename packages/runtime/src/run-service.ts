import type { Redis } from "ioredis";
import type { Registry } from "prom-client";
import { installClockSkew } from "./clock-skew.js";
import { EnvError } from "./env.js";
import { parseFaultPoints, type FaultPoints } from "./fault-points.js";
import { advertisedReadyzUrl, startHealthServer, type Readiness, type ReadinessCheck } from "./health-server.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetricsRegistry } from "./metrics.js";
import { installGracefulShutdown, type ShutdownStep } from "./shutdown.js";
import { startStoreProbe } from "./store-probe.js";
import { appStores, redisTarget, type Pingable, type RedisEnv } from "./stores.js";
import { createTracing, tracingConfig, type Tracing, type TracingEnv } from "./tracing.js";

/**
 * What a long-running service process (the scheduler, the worker; both started by runService) is built from:
 * its stores and process plumbing (and, per app, a config).
 */
export interface ServiceDeps<P> {
  pool: P;
  /** BullMQ connection (maxRetriesPerRequest: null). */
  redis: Redis;
  /** Fail-fast connection for the due index and breakers, so a Redis outage degrades to polling. */
  indexRedis: Redis;
  logger: Logger;
  registry: Registry;
  faults?: FaultPoints;
  /** OpenTelemetry spans (NO_TRACING unless OTEL_EXPORTER_OTLP_ENDPOINT is set; absent in tests: off). */
  tracing?: Tracing;
  /** Who this process is, for its heartbeat row (the operator status page); absent in tests that build an app directly. */
  node?: ServiceNode;
}

/** What a process says about itself in its heartbeat. */
export interface ServiceNode {
  id: string;
  region: string;
  /** The app's package version. */
  version: string;
  /** Its own /readyz, as others reach it (advertisedReadyzUrl). */
  healthUrl: string;
  startedAt: Date;
}

/** What runService reads from an app's parsed env (baseEnvShape and serviceEnvShape provide it). */
export interface ServiceEnv extends TracingEnv, RedisEnv {
  DATABASE_URL: string;
  LOG_LEVEL: string;
  TICK_REGION: string;
  TICK_BIND_HOST: string;
  TICK_FAULT_POINTS?: string | undefined;
  TICK_TEST_CLOCK_SKEW_MS: number;
  /** metricsEnvShape's; default 15 s. */
  TICK_STORE_PROBE_INTERVAL?: number;
}

/** The app's own variables the start-up needs (each app names them after itself: SCHEDULER_ID, WORKER_ID, ...). */
export interface ServiceIdentity {
  /** Written into leases; names the process in logs and in Postgres' application_name. */
  id: string;
  healthPort: number;
  dbPoolSize: number;
}

export interface RunServiceOptions<E extends ServiceEnv, P extends Pingable> {
  name: string;
  /** The raw environment, passed by the app's composition root (the only reader of process.env). */
  rawEnv: Record<string, string | undefined>;
  loadEnv: (raw: Record<string, string | undefined>) => E;
  identity: (env: E) => ServiceIdentity;
  /** Makes the Postgres pool (@tick/db's createPool: the runtime does not know the database driver). */
  createPool: (url: string, options: { max: number; applicationName: string }) => P;
  /** Reads the database's clock (@tick/db's sql.databaseNow), for tick_clock_offset_seconds. */
  databaseNow: (pool: P) => Promise<Date>;
  /** The app's package version (its package.json), reported in its heartbeat and /readyz. */
  version: string;
  /**
   * Builds and starts the app; returns how it stops taking work (before the stores close), what to log and,
   * optionally, its own readiness (checks chosen from the stores' `database` and `redis`, facts for the body).
   */
  start: (context: { env: E; deps: ServiceDeps<P> }) => Promise<{
    stop: ShutdownStep;
    info?: Record<string, unknown>;
    readiness?: (storeChecks: Record<string, ReadinessCheck>) => Readiness;
  }>;
}

/** Exit code for bad configuration (sysexits EX_CONFIG), so supervisors can tell it from a crash. */
export const EXIT_CONFIG = 78;

/**
 * The life of a long-running process: validate config (exit 78 naming the bad variable), JSON logs,
 * metrics (with the clock offset and store probe), its Postgres pool and Redis connections, health endpoints checking them, then clean
 * shutdown on SIGTERM/SIGINT: readiness fails, the app stops, the stores and the health server close.
 */
export async function runService<E extends ServiceEnv, P extends Pingable>(options: RunServiceOptions<E, P>): Promise<void> {
  const { name } = options;
  try {
    let env: E;
    try {
      env = options.loadEnv(options.rawEnv);
    } catch (err) {
      if (!(err instanceof EnvError)) throw err;
      process.stderr.write(`${name}: ${err.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    // Before anything reads the clock (parsing the env does not).
    installClockSkew(env.TICK_TEST_CLOCK_SKEW_MS);
    const { id, healthPort, dbPoolSize } = options.identity(env);
    const logger = createLogger({ name, level: env.LOG_LEVEL });
    const registry = createMetricsRegistry(name);
    const stores = appStores(options.createPool(env.DATABASE_URL, { max: dbPoolSize, applicationName: `tick-${name} ${id}` }), redisTarget(env), logger, `tick-${name}`);
    const { pool, redis, indexRedis } = stores;
    const probe = startStoreProbe({ registry, databaseNow: () => options.databaseNow(pool), pingRedis: () => indexRedis.ping(), intervalMs: env.TICK_STORE_PROBE_INTERVAL });
    const tracing = await createTracing(tracingConfig(env, { serviceName: `tick-${name}`, serviceInstanceId: id }), logger);
    // Listening before the app starts (503 `starting` until then), so the heartbeat can name its address.
    const health = await startHealthServer({ port: healthPort, host: env.TICK_BIND_HOST, logger, registry, checks: stores.checks, starting: true });
    const node: ServiceNode = { id, region: env.TICK_REGION, version: options.version, healthUrl: advertisedReadyzUrl(health.host, health.port), startedAt: new Date() };
    const app = await options.start({ env, deps: { pool, redis, indexRedis, logger, registry, tracing, node, faults: parseFaultPoints(env.TICK_FAULT_POINTS) } });
    const readiness = app.readiness?.(stores.checks) ?? {};
    health.markStarted({ ...readiness, about: () => ({ id, version: options.version, ...readiness.about?.() }) });
    installGracefulShutdown({
      logger,
      steps: [
        { name: "fail readiness", run: () => health.markShuttingDown() },
        app.stop,
        // After the app: the spans of the attempts it drained are exported too.
        { name: "export buffered spans", run: () => tracing.shutdown() },
        { name: "stop store probe", run: () => probe.stop() },
        ...stores.stop,
        { name: "close health server", run: () => health.close() },
      ],
    });
    logger.info({ [`${name}Id`]: id, region: env.TICK_REGION, ...app.info, healthHost: health.host, healthPort: health.port }, `${name} started`);
  } catch (err) {
    process.stderr.write(`${name}: fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  }
}
