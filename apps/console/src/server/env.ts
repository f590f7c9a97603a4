import { z } from "zod";
import { baseEnvShape, parseEnv } from "@tick/runtime";

export const consoleEnvSchema = z.object({
  ...baseEnvShape,
  /** Signs console session cookies; at least 32 characters. */
  NEXTAUTH_SECRET: z.string().min(32, "must be at least 32 characters"),
  /** The console's public URL, e.g. http://127.0.0.1:3000. */
  NEXTAUTH_URL: z.url(),
  /** Number of scheduler shards tenants are spread over (must match the schedulers'). */
  TICK_SHARDS: z.coerce.number().int().positive().max(4096).default(16),
});

export type ConsoleEnv = z.output<typeof consoleEnvSchema>;

let cached: ConsoleEnv | undefined;

/**
 * The console's config, parsed once. Next has no single main(), so instrumentation.ts calls this at
 * start-up (a bad variable stops the server with a message naming it) and server code reads it here.
 */
export function getEnv(): ConsoleEnv {
  // eslint-disable-next-line no-restricted-properties -- the console's one reader of process.env
  cached ??= parseEnv(consoleEnvSchema, process.env);
  return cached;
}
