import { sql } from "@tick/db";
import { startHealthServer, startStoreProbe, type HealthServer, type ShutdownStep, type StoreProbe } from "@tick/runtime";
import { getContext } from "./context";
import { getEnv } from "./env";
import { readinessChecks } from "./health";

interface MetricsServer {
  server: HealthServer;
  probe: StoreProbe;
}

// On globalThis, as the context: started once per process, whichever bundle asks (next dev reloads modules).
const holder = globalThis as unknown as { __tickConsoleMetricsServer?: Promise<MetricsServer>; __tickConsoleMetricsPort?: number };

/**
 * The console's side server, as the scheduler's and worker's health port: /metrics (the console's
 * registry, with the clock offset and store probe), /healthz and /readyz on CONSOLE_METRICS_PORT and
 * TICK_BIND_HOST, so the metrics never reach the public HTTP port. Started once, at server start
 * (instrumentation-node.ts); rejects when the port cannot be bound.
 */
export function startMetricsServer(): Promise<MetricsServer> {
  holder.__tickConsoleMetricsServer ??= (async () => {
    const env = getEnv();
    const { metrics, pool, redis, logger } = getContext();
    const probe = startStoreProbe({ registry: metrics.registry, databaseNow: () => sql.databaseNow(pool), pingRedis: () => redis.ping(), intervalMs: env.TICK_STORE_PROBE_INTERVAL });
    try {
      const server = await startHealthServer({ port: env.CONSOLE_METRICS_PORT, host: env.TICK_BIND_HOST, logger, registry: metrics.registry, checks: readinessChecks() });
      holder.__tickConsoleMetricsPort = server.port;
      return { server, probe };
    } catch (err) {
      probe.stop();
      throw err;
    }
  })();
  return holder.__tickConsoleMetricsServer;
}

/** Whether a listening port is the side server's (the clean stop drains Next's servers, not this one). */
export function isMetricsPort(port: number | undefined): boolean {
  return port !== undefined && port === holder.__tickConsoleMetricsPort;
}

/**
 * The side server's part of the clean stop, in the scheduler's order: its /readyz fails first, the store
 * probe stops before the stores close, the server closes last.
 */
export function metricsServerStopSteps(): { failReadiness: ShutdownStep; stopProbe: ShutdownStep; close: ShutdownStep } {
  const started = () => holder.__tickConsoleMetricsServer?.catch(() => undefined);
  return {
    failReadiness: { name: "fail readiness (metrics port)", run: async () => (await started())?.server.markShuttingDown() },
    stopProbe: { name: "stop store probe", run: async () => (await started())?.probe.stop() },
    close: { name: "close metrics server", run: async () => (await started())?.server.close() },
  };
}
