import type { Redis } from "ioredis";
import { createHash } from "node:crypto";
import { AppError } from "@tick/core";
import type { Logger } from "@tick/runtime";
import { failOpenRedis } from "./admission";

// A fixed window per key: INCR, and the window's expiry set by the first hit. One script so the count and
// its expiry cannot part (a crash between INCR and PEXPIRE would leave a counter that never resets).
const HIT = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}
`;

type RedisWithHit = Redis & { tickAuthHit(key: string, windowMs: number, by: number): Promise<[number, number]> };

export interface AuthLimitPolicy {
  /** Attempts one client address may make per window (sign-up and sign-in each count their own). */
  perAddress: number;
  /** Sign-ups per email, and failed sign-ins per email, per window. */
  perEmail: number;
  windowMs: number;
}

export interface AuthLimits {
  /** Counts an attempt from this address; throws 429 `rate_limited` once the address is over its limit. */
  hitAddress(action: "signup" | "signin", address: string): Promise<void>;
  /** Throws 429 if this email is over its limit for the action (without counting). */
  checkEmail(action: "signup" | "signin", email: string): Promise<void>;
  /** Counts one against the email (a sign-up, or a failed sign-in). */
  hitEmail(action: "signup" | "signin", email: string): Promise<void>;
}

/**
 * Sign-up and sign-in limits (issue #19): per client address and per email, in Redis so every console
 * node shares them. Brute force gets 429 with Retry-After for the rest of the window, never a lockout:
 * the count resets by itself, and a sign-in counts against its email only when it fails, so the real
 * user, whose attempt succeeds, is not what fills it. Keys hold a hash of the email, not the address
 * itself. If Redis cannot answer, the limit is skipped and logged (fail open, as admission does): the
 * passwords are still scrypt-hashed, which bounds guessing by itself.
 */
export function createAuthLimits(options: { redis: Redis; prefix: string; policy: AuthLimitPolicy; logger: Logger; timeoutMs?: number }): AuthLimits {
  const { redis, prefix, policy, logger } = options;
  const r = redis as RedisWithHit;
  if (typeof r.tickAuthHit !== "function") r.defineCommand("tickAuthHit", { numberOfKeys: 1, lua: HIT });
  const ask = failOpenRedis(logger, options.timeoutMs ?? 500, "sign-up/sign-in rate limit");
  const digest = (s: string) => createHash("sha256").update(s).digest("base64url").slice(0, 22);
  const hit = (key: string, by: number): Promise<[number, number] | null> => ask(r.tickAuthHit(`${prefix}:authlimit:${key}`, policy.windowMs, by));
  const refuse = (what: string, ttlMs: number) =>
    new AppError("rate_limited", `Too many ${what}. Try again in ${Math.ceil(ttlMs / 1000)} s.`, { retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) });
  const label = (action: "signup" | "signin") => (action === "signup" ? "sign-ups" : "sign-in attempts");

  return {
    async hitAddress(action, address) {
      const res = await hit(`${action}:ip:${digest(address)}`, 1);
      if (res && res[0] > policy.perAddress) throw refuse(`${label(action)} from this address`, res[1]);
    },
    async checkEmail(action, email) {
      const res = await hit(`${action}:email:${digest(email.toLowerCase())}`, 0);
      if (res && res[0] >= policy.perEmail) throw refuse(`${label(action)} for this email`, res[1]);
    },
    async hitEmail(action, email) {
      await hit(`${action}:email:${digest(email.toLowerCase())}`, 1);
    },
  };
}
