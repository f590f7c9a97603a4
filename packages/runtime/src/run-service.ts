import { installClockSkew } from "./clock-skew.js";
import type { Registry } from "prom-client";
import { EnvError } from "./env.js";
import { startHealthServer, type ReadinessCheck } from "./health-server.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetricsRegistry } from "./metrics.js";
import { installGracefulShutdown, type ShutdownStep } from "./shutdown.js";

export interface ServiceParts {
  /** Dependencies /readyz checks. */
  checks: Record<string, ReadinessCheck>;
  /** Run in order on SIGTERM/SIGINT: stop taking work, drain, close connections. */
  stop: ShutdownStep[];
  /** Logged once the service is up. */
  info?: Record<string, unknown>;
}

/** What runService reads from an app's parsed env (baseEnvShape and serviceEnvShape provide it). */
export interface ServiceEnv {
  LOG_LEVEL: string;
  TICK_BIND_HOST: string;
  TICK_TEST_CLOCK_SKEW_MS: number;
}

export interface RunServiceOptions<E extends ServiceEnv> {
  name: string;
  /** The raw environment, passed by the app's composition root (the only reader of process.env). */
  rawEnv: Record<string, string | undefined>;
  loadEnv: (raw: Record<string, string | undefined>) => E;
  healthPort: (env: E) => number;
  start: (context: { env: E; logger: Logger; registry: Registry }) => Promise<ServiceParts>;
}

/** Exit code for bad configuration (sysexits EX_CONFIG), so supervisors can tell it from a crash. */
export const EXIT_CONFIG = 78;

/**
 * The life of a long-running process: validate config (exit 78 naming the bad variable), JSON logs,
 * metrics, health endpoints, then clean shutdown on SIGTERM/SIGINT.
 */
export async function runService<E extends ServiceEnv>(options: RunServiceOptions<E>): Promise<void> {
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
    const logger = createLogger({ name, level: env.LOG_LEVEL });
    const registry = createMetricsRegistry(name);
    const parts = await options.start({ env, logger, registry });
    const health = await startHealthServer({ port: options.healthPort(env), host: env.TICK_BIND_HOST, logger, registry, checks: parts.checks });
    installGracefulShutdown({
      logger,
      steps: [
        { name: "fail readiness", run: () => health.markShuttingDown() },
        ...parts.stop,
        { name: "close health server", run: () => health.close() },
      ],
    });
    logger.info({ ...parts.info, healthHost: health.host, healthPort: health.port }, `${name} started`);
  } catch (err) {
    process.stderr.write(`${name}: fatal: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  }
}
