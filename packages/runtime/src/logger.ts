import { pino, type Logger } from "pino";

export type { Logger };

/** Paths whose values must never reach a log line: credentials, API keys, signing secrets. */
export const REDACTED_PATHS = [
  "authorization",
  "apiKey",
  "password",
  "secret",
  "token",
  "*.authorization",
  "*.Authorization",
  "*.apiKey",
  "*.password",
  "*.secret",
  "*.token",
  "headers.authorization",
  "headers.cookie",
  "req.headers.authorization",
  "req.headers.cookie",
  "*.headers.authorization",
  "*.headers.cookie",
];

export interface CreateLoggerOptions {
  name: string;
  level?: string;
  /** Where lines go; defaults to stdout. Tests pass a stream to read what was written. */
  destination?: NodeJS.WritableStream;
}

/** JSON logs with ISO timestamps; secrets under the redacted paths are replaced by "[redacted]". */
export function createLogger({ name, level = "info", destination }: CreateLoggerOptions): Logger {
  return pino(
    {
      name,
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination ?? pino.destination({ sync: false }),
  );
}
