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

// A window's count and the rest of its life in ms, without touching it (0 and -2 when there is none).
const PEEK = `
return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}
`;

type RedisWithHit = Redis & {
  tickAuthHit(key: string, windowMs: number, by: number): Promise<[number, number]>;
  tickAuthPeek(key: string): Promise<[number, number]>;
};

export interface AuthLimitPolicy {
  /** Attempts one client address may make per window (sign-up and sign-in each count their own). */
  perAddress: number;
  /**
   * Sign-ups per email, and failed sign-ins per email (what addresses not known for it are held to) and
   * per (email, known address), per window.
   */
  perEmail: number;
  windowMs: number;
  /** How long a successful sign-in keeps its (email, address) pair known; 0: no address is ever known. */
  knownAddressTtlMs: number;
}

export interface AuthLimits {
  /** Counts an attempt from this address; throws 429 `rate_limited` once the address is over its limit. */
  hitAddress(action: "signup" | "signin", address: string): Promise<void>;
  /** Throws 429 if this email is over its limit for the action (without counting). */
  checkEmail(action: "signup" | "signin", email: string): Promise<void>;
  /** Counts one against the email (a sign-up, or a failed sign-in). */
  hitEmail(action: "signup" | "signin", email: string): Promise<void>;
  /**
   * A password sign-in's gate, before the password is checked: counts the attempt against the address
   * (429 over its limit), then throws 429 once the failures this attempt is held to reach `perEmail`:
   * its (email, address) pair's own when the email signed in from this address before (a known
   * address), the email's otherwise.
   */
  admitSignIn(email: string, address: string): Promise<void>;
  /** A failed sign-in: one against the email (what unknown addresses are held to) and one against the pair. */
  signInFailed(email: string, address: string): Promise<void>;
  /** A successful sign-in: the pair is known for `knownAddressTtlMs` from now, and its failures are forgotten. */
  signInSucceeded(email: string, address: string): Promise<void>;
}

/**
 * Sign-up and sign-in limits: per client address and per email, in Redis so every console node shares
 * them. Guessing gets 429 with Retry-After for the rest of the window; the count resets by itself.
 *
 * Sign-in slows the guesser, not the owner. Every attempt counts against its address; a failed one
 * counts against its email and against its (email, address) pair. A successful sign-in marks the pair
 * known for `knownAddressTtlMs` (and forgets the pair's failures). An attempt from an address not known
 * for the email is refused once the email's failures reach `perEmail`, so guesses spread over many
 * addresses stay bounded; an attempt from a known address is held only to its pair's own failures, so
 * strangers failing from elsewhere cannot keep the owner out of a device or network they used before.
 * A stranger sharing the owner's address is the per-address limit's to stop. A success never clears
 * the email's count: that would hand the strangers a fresh allowance each time the owner signs in.
 *
 * Keys hold hashes of the email and address, never either itself. If Redis cannot answer, the limit is
 * skipped and logged (fail open, as admission does): the passwords are still scrypt-hashed, which bounds
 * guessing by itself.
 */
export function createAuthLimits(options: { redis: Redis; prefix: string; policy: AuthLimitPolicy; logger: Logger; timeoutMs?: number }): AuthLimits {
  const { redis, prefix, policy, logger } = options;
  const r = redis as RedisWithHit;
  if (typeof r.tickAuthHit !== "function") r.defineCommand("tickAuthHit", { numberOfKeys: 1, lua: HIT });
  if (typeof r.tickAuthPeek !== "function") r.defineCommand("tickAuthPeek", { numberOfKeys: 1, lua: PEEK });
  const ask = failOpenRedis(logger, options.timeoutMs ?? 500, "sign-up/sign-in rate limit");
  const digest = (s: string) => createHash("sha256").update(s).digest("base64url").slice(0, 22);
  const keyOf = (key: string) => `${prefix}:authlimit:${key}`;
  const hit = (key: string, by: number): Promise<[number, number] | null> => ask(r.tickAuthHit(keyOf(key), policy.windowMs, by));
  const peek = (key: string): Promise<[number, number] | null> => ask(r.tickAuthPeek(keyOf(key)));
  const emailKey = (action: "signup" | "signin", email: string) => `${action}:email:${digest(email.toLowerCase())}`;
  // One hash of both, so the key names neither and a pair cannot be told from another email's.
  const pairOf = (email: string, address: string) => digest(`${email.toLowerCase()}\n${address}`);
  const refuse = (what: string, ttlMs: number) =>
    new AppError("rate_limited", `Too many ${what}. Try again in ${Math.ceil(ttlMs / 1000)} s.`, { retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)) });
  const label = (action: "signup" | "signin") => (action === "signup" ? "sign-ups" : "sign-in attempts");

  return {
    async hitAddress(action, address) {
      const res = await hit(`${action}:ip:${digest(address)}`, 1);
      if (res && res[0] > policy.perAddress) throw refuse(`${label(action)} from this address`, res[1]);
    },
    async checkEmail(action, email) {
      const res = await hit(emailKey(action, email), 0);
      if (res && res[0] >= policy.perEmail) throw refuse(`${label(action)} for this email`, res[1]);
    },
    async hitEmail(action, email) {
      await hit(emailKey(action, email), 1);
    },
    async admitSignIn(email, address) {
      const pair = pairOf(email, address);
      const [fromAddress, known, pairFailures, emailFailures] = await Promise.all([
        hit(`signin:ip:${digest(address)}`, 1),
        ask(r.exists(keyOf(`signin:known:${pair}`))),
        peek(`signin:pair:${pair}`),
        peek(emailKey("signin", email)),
      ]);
      if (fromAddress && fromAddress[0] > policy.perAddress) throw refuse("sign-in attempts from this address", fromAddress[1]);
      if (known === null) return; // Redis did not answer: fail open
      const failures = known ? pairFailures : emailFailures;
      // The same words either way, so a refusal does not tell whether the owner signed in from here.
      if (failures && failures[0] >= policy.perEmail) throw refuse("sign-in attempts for this email", failures[1] > 0 ? failures[1] : policy.windowMs);
    },
    async signInFailed(email, address) {
      await Promise.all([hit(emailKey("signin", email), 1), hit(`signin:pair:${pairOf(email, address)}`, 1)]);
    },
    async signInSucceeded(email, address) {
      const pair = pairOf(email, address);
      const write = r.multi().del(keyOf(`signin:pair:${pair}`));
      if (policy.knownAddressTtlMs > 0) write.set(keyOf(`signin:known:${pair}`), "1", "PX", policy.knownAddressTtlMs);
      await ask(write.exec());
    },
  };
}
