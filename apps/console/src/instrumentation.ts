// Runs once when the Next server starts. The Node-only part lives in its own module so the edge
// bundle never sees it.
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") await import("./instrumentation-node");
}
