import { z } from "zod";

/** Same shape as the `jobs.backoff` JSON column and its default in prisma/schema.prisma. */
export const backoffPolicySchema = z
  .object({
    strategy: z.enum(["exponential", "fixed"]),
    baseMs: z.number().int().nonnegative(),
    maxMs: z.number().int().nonnegative(),
    jitter: z.enum(["full", "none"]),
  })
  .refine((p) => p.maxMs >= p.baseMs, { message: "maxMs must be at least baseMs", path: ["maxMs"] });

export type BackoffPolicy = z.infer<typeof backoffPolicySchema>;

/**
 * Delay before the retry that follows failed attempt number `attemptNumber` (1-based).
 * Exponential: baseMs * 2^(n-1), capped at maxMs. Full jitter then picks uniformly in [0, cap), which
 * spreads a crowd of jobs failing together (S11) instead of retrying them in lockstep.
 * `random` is injected (Math.random in production) so tests are exact.
 */
export function computeBackoffMs(policy: BackoffPolicy, attemptNumber: number, random: () => number): number {
  if (!Number.isInteger(attemptNumber) || attemptNumber < 1) {
    throw new RangeError(`attemptNumber must be an integer >= 1, got ${attemptNumber}`);
  }
  // Exponent clamped so 2^n stays finite; anything past ~2^52 is far above any sane maxMs anyway.
  const uncapped = policy.strategy === "exponential" ? policy.baseMs * 2 ** Math.min(attemptNumber - 1, 52) : policy.baseMs;
  const capped = Math.min(policy.maxMs, uncapped);
  if (policy.jitter === "none") return capped;
  // Clamp a misbehaving random source so the result stays within [0, capped].
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.min(capped, Math.floor(r * capped));
}
