import { inspect } from "node:util";

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Says what was being waited for when the deadline passes. */
  description?: string;
}

/**
 * Polls `probe` until it returns a truthy value (which is returned) or the deadline passes. Tests
 * wait for conditions like this instead of sleeping, so they pass on a loaded 2-core machine.
 */
export async function waitFor<T>(probe: () => Promise<T> | T, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 50, description = "condition" } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const suffix = lastError ? ` (last error: ${lastError instanceof Error ? lastError.message : inspect(lastError)})` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${suffix}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
