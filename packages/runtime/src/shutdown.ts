import type { Logger } from "pino";

export type ShutdownStep = { name: string; run: () => Promise<void> | void };

export interface GracefulShutdownOptions {
  logger: Logger;
  /** Run in order: typically stop taking work, drain, then close connections. */
  steps: ShutdownStep[];
  /** After this the process exits with code 1 even if a step hangs. */
  timeoutMs?: number;
  exit?: (code: number) => void;
}

/**
 * SIGTERM/SIGINT run the steps once, in order, then exit 0. A second signal or the timeout exits at
 * once with 1, so a stuck dependency can never keep a process alive forever.
 */
export function installGracefulShutdown(options: GracefulShutdownOptions): () => Promise<void> {
  const { logger, steps, timeoutMs = 15_000, exit = (code) => process.exit(code) } = options;
  let running: Promise<void> | undefined;

  const shutdown = (signal: string): Promise<void> => {
    if (running) {
      logger.warn({ signal }, "second signal during shutdown: exiting now");
      exit(1);
      return running;
    }
    logger.info({ signal }, "shutting down");
    const timer = setTimeout(() => {
      logger.error({ timeoutMs }, "shutdown timed out: exiting");
      exit(1);
    }, timeoutMs);
    timer.unref();
    running = (async () => {
      let code = 0;
      for (const step of steps) {
        try {
          await step.run();
        } catch (err) {
          code = 1;
          logger.error({ err, step: step.name }, "shutdown step failed");
        }
      }
      clearTimeout(timer);
      logger.info({ code }, "stopped");
      logger.flush?.();
      exit(code);
    })();
    return running;
  };

  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  return () => shutdown("manual");
}
