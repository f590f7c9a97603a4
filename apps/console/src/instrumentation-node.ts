// Runs once as the server starts, before it serves anything: API responses lose Next's router Vary,
// each request is tagged with its socket's address (server/api/client-address.ts),
// the configuration is validated (a bad variable stops the server with a message naming it), the
// console's clean stop is installed when NEXT_MANUAL_SIG_HANDLE leaves the signals to it, the metrics
// side server starts, and job creates with an API key are served ahead of Next's router (server/direct-api.ts).
import { EnvError, EXIT_CONFIG } from "@tick/runtime";
import { stripRouterVaryFromApi } from "./server/api-vary";
import { recordSocketAddresses } from "./server/api/client-address";
import { createJob } from "./server/api/create-job";
import { apiRoute } from "./server/api/route";
import { installDirectApi } from "./server/direct-api";
import { getEnv } from "./server/env";
import { startMetricsServer } from "./server/metrics-server";
import { installConsoleShutdown } from "./server/shutdown";

stripRouterVaryFromApi();
// Each request's socket address, for per-address limits: route handlers are given no socket.
recordSocketAddresses();

try {
  if (getEnv().NEXT_MANUAL_SIG_HANDLE) installConsoleShutdown();
  installDirectApi(new Map([["POST /api/v1/jobs", apiRoute("createJob", createJob).pipeline]]));
  // /metrics on CONSOLE_METRICS_PORT, never on the public port; a port that cannot be bound stops the console.
  startMetricsServer().catch((err: unknown) => {
    process.stderr.write(`console: metrics server on CONSOLE_METRICS_PORT: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
} catch (err) {
  if (!(err instanceof EnvError)) throw err;
  process.stderr.write(`console: ${err.message}\n`);
  process.exit(EXIT_CONFIG);
}
