import { subscribe } from "node:diagnostics_channel";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { installGracefulShutdown, storeLifecycle } from "@tick/runtime";
import { getContext } from "./context";
import { isMetricsPort, metricsServerStopSteps } from "./metrics-server";
import { stopTracing } from "./tracing";

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * The console's clean stop, used when NEXT_MANUAL_SIG_HANDLE is set (npm start and the console's
 * `start` script set it): `next start`'s own handler exits 130/143 after SIGINT/SIGTERM, which a
 * supervisor reads as a failure. Here the HTTP server stops accepting and finishes the requests in
 * flight, buffered spans are exported (when tracing is on), Redis and the database pools close, the metrics side server closes, "stopped" is logged and
 * the process exits 0; a second signal or 15 s exits 1, as the scheduler and worker do.
 */
export function installConsoleShutdown(): void {
  // Next does not hand out its http.Server; every request names it on this channel (the metrics side
  // server's too: it closes last, on its own step).
  const servers = new Set<Server>();
  subscribe("http.server.request.start", (message) => {
    const { server } = message as { server: Server };
    if (!isMetricsPort((server.address() as AddressInfo | null)?.port)) servers.add(server);
  });
  const app = getContext();
  const metricsServer = metricsServerStopSteps();
  installGracefulShutdown({
    logger: app.logger,
    steps: [
      metricsServer.failReadiness,
      { name: "finish requests in flight", run: async () => void (await Promise.all([...servers].map(closeServer))) },
      metricsServer.stopProbe,
      // After the requests: their "create job" spans are exported too (bounded: 3 s at most).
      { name: "export buffered spans", run: () => stopTracing() },
      ...storeLifecycle(app.pool, app.redis).stop,
      { name: "close prisma", run: () => app.prisma.$disconnect() },
      metricsServer.close,
    ],
  });
}
