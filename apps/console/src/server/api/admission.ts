import type { Redis } from "ioredis";
import type { Logger } from "@tick/runtime";

// Token bucket per tenant, refilled continuously at `rate` tokens/s up to `burst`. One atomic script
// using Redis' own clock (TIME), so API nodes with skewed clocks share one consistent bucket.
const TAKE_TOKENS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then tokens = burst; ts = now end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local granted = math.min(want, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
local retry = 0
if granted < want then
  local need = math.min(want - granted, burst) - tokens
  retry = math.ceil(need / rate * 1000)
end
return {granted, math.floor(tokens), retry}
`;

export interface AdmissionResult {
  granted: number;
  remaining: number;
  /** Milliseconds until the refused part could be admitted (0 when all was granted). */
  retryAfterMs: number;
  /** Milliseconds until the bucket is full again (the RateLimit-Reset of the IETF draft). */
  resetMs: number;
  limit: number;
  /** False when Redis did not answer in time and the request was let through (fail open). */
  enforced: boolean;
}

type RedisWithTake = Redis & { tickTakeTokens(key: string, rate: number, burst: number, want: number): Promise<[number, number, number]> };

export interface AdmissionOptions {
  redis: Redis;
  prefix: string;
  timeoutMs: number;
  logger: Logger;
  /** Told each time Redis did not answer and the rate limit was skipped (tick_api_admission_fail_open_total). */
  onFailOpen?: () => void;
}

/**
 * Takes up to `want` admission tokens for a tenant. When Redis is unreachable the check fails open:
 * the rate limit is skipped (and logged), while the pending-job quota, enforced in Postgres in the
 * creating transaction, still holds. Rejecting all traffic because a rebuildable cache is down would
 * turn a Redis blip into an outage of the API.
 */
/**
 * A Redis call that fails open: its answer, or null when Redis did not answer within `timeoutMs` (the
 * caller lets the request through). Logged at most every 10 s, so an outage does not flood the log.
 * Shared by admission and the sign-up/sign-in limits (auth-limits.ts).
 */
export function failOpenRedis(logger: Logger, timeoutMs: number, what: string) {
  let lastWarning = 0;
  return async <T>(call: Promise<T>, context: Record<string, unknown> = {}): Promise<T | null> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        call,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      if (Date.now() - lastWarning > 10_000) {
        lastWarning = Date.now();
        logger.warn({ err: (err as Error).message, ...context }, `${what} skipped: redis unavailable (failing open)`);
      }
      return null;
    } finally {
      clearTimeout(timer);
    }
  };
}

export function createAdmission({ redis, prefix, timeoutMs, logger, onFailOpen }: AdmissionOptions) {
  const r = redis as RedisWithTake;
  if (typeof r.tickTakeTokens !== "function") r.defineCommand("tickTakeTokens", { numberOfKeys: 1, lua: TAKE_TOKENS });
  const ask = failOpenRedis(logger, timeoutMs, "admission rate limit");

  return async function admit(tenant: { id: string; admissionRate: number; admissionBurst: number }, want: number): Promise<AdmissionResult> {
    const limit = tenant.admissionBurst;
    const answer = await ask(r.tickTakeTokens(`${prefix}:admission:${tenant.id}`, tenant.admissionRate, tenant.admissionBurst, want), { tenantId: tenant.id });
    if (!answer) {
      onFailOpen?.();
      return { granted: want, remaining: limit, retryAfterMs: 0, resetMs: 0, limit, enforced: false };
    }
    const [granted, remaining, retryAfterMs] = answer;
    // Full again once the taken tokens have flowed back at the tenant's rate: that wait is the RateLimit-Reset sent.
    const resetMs = Math.max(retryAfterMs, Math.ceil(((tenant.admissionBurst - remaining) / tenant.admissionRate) * 1000));
    return { granted, remaining, retryAfterMs, resetMs, limit, enforced: true };
  };
}

export type Admit = ReturnType<typeof createAdmission>;

/** IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(result: AdmissionResult): Record<string, string> {
  if (!result.enforced) return {};
  return {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": String(Math.ceil(result.resetMs / 1000)),
  };
}
