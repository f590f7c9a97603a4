// Runs once when the Next server starts. The Node-only part lives in its own module so the edge
// bundle never sees it.
export async function register(): Promise<void> {
  // eslint-disable-next-line no-restricted-properties -- Next sets NEXT_RUNTIME; the app's config is read in instrumentation-node
  if (process.env.NEXT_RUNTIME === "nodejs") await import("./instrumentation-node");
}
