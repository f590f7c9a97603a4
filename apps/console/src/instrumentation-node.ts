// Runs once as the server starts, before it serves anything: API responses lose Next's router Vary,
// the configuration is validated (a bad variable stops the server with a message naming it), and the
// console's clean stop is installed when NEXT_MANUAL_SIG_HANDLE leaves the signals to it.
import { EnvError, EXIT_CONFIG } from "@tick/runtime";
import { stripRouterVaryFromApi } from "./server/api-vary";
import { getEnv } from "./server/env";
import { installConsoleShutdown } from "./server/shutdown";

stripRouterVaryFromApi();

try {
  if (getEnv().NEXT_MANUAL_SIG_HANDLE) installConsoleShutdown();
} catch (err) {
  if (!(err instanceof EnvError)) throw err;
  process.stderr.write(`console: ${err.message}\n`);
  process.exit(EXIT_CONFIG);
}
