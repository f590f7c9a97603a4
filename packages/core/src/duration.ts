import { z } from "zod";

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

// Integers only: config like "1.5m" is rare, and refusing it avoids fractional milliseconds.
const DURATION_RE = /^(\d+)(ms|s|m|h|d)?$/;

/**
 * Parses "250ms", "30s", "5m", "1h", "2d" or a plain number of milliseconds ("1500") into milliseconds.
 * Throws an Error that quotes the bad input, so an env validation message can name both variable and value.
 */
export function parseDuration(input: string): number {
  const match = DURATION_RE.exec(input.trim());
  if (!match) {
    throw new Error(
      `Invalid duration ${JSON.stringify(input)}: expected a non-negative integer with an optional unit ` +
        `ms, s, m, h or d (e.g. "250ms", "30s", "5m", "1500")`,
    );
  }
  const unit = (match[2] ?? "ms") as keyof typeof UNIT_MS;
  const ms = Number(match[1]) * UNIT_MS[unit];
  if (!Number.isSafeInteger(ms)) throw new Error(`Invalid duration ${JSON.stringify(input)}: too large`);
  return ms;
}

/**
 * Zod schema: a duration string (env vars, API bodies) or a non-negative integer of ms (JSON numbers),
 * output always milliseconds. One transform rather than a union of the two, so the issue carries
 * parseDuration's message (a union would only report "Invalid input").
 */
export const durationSchema = z
  .union([z.string(), z.number()], { error: 'must be a duration like "30s" or a number of milliseconds' })
  .transform((value, ctx) => {
    if (typeof value === "number") {
      if (Number.isSafeInteger(value) && value >= 0) return value;
      ctx.addIssue({ code: "custom", message: `Invalid duration ${value}: expected a non-negative integer of ms`, input: value });
      return z.NEVER;
    }
    try {
      return parseDuration(value);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message, input: value });
      return z.NEVER;
    }
  });
