// Runs once when the Next server starts: validate configuration before serving anything.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { getEnv } = await import("./server/env");
  const { EnvError, EXIT_CONFIG } = await import("@tick/runtime");
  try {
    getEnv();
  } catch (err) {
    if (err instanceof EnvError) {
      process.stderr.write(`console: ${err.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw err;
  }
}
