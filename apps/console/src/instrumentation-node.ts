// Validate configuration before serving anything: a bad variable stops the server with a message naming it.
import { EnvError, EXIT_CONFIG } from "@tick/runtime";
import { getEnv } from "./server/env";
import { installConsoleShutdown } from "./server/shutdown";

try {
  if (getEnv().NEXT_MANUAL_SIG_HANDLE) installConsoleShutdown();
} catch (err) {
  if (!(err instanceof EnvError)) throw err;
  process.stderr.write(`console: ${err.message}\n`);
  process.exit(EXIT_CONFIG);
}
