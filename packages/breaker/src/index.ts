import type { Redis } from "ioredis";

/**
 * A circuit breaker and a retry budget per tenant and downstream dependency (S11), shared by all workers
 * through Redis and read by the schedulers, so a failing dependency is protected by the whole fleet at once.
 * One per tenant: a tenant names its dependencies (and can make its own calls fail at will), so a breaker
 * shared across tenants would let one tenant hold another's jobs by failing against the same key.
 *
 * - Outcomes are counted in time buckets over a sliding window. When at least `minRequests` outcomes
 *   in the window fail at `failureRate` or more, the breaker opens: schedulers stop dispatching that
 *   dependency's jobs and workers hand back any that arrive, without burning an attempt.
 * - After `openMs` (fixed by whoever opened it, so every reader agrees) it is half-open: one probe at a time may run; a success closes it, a failure
 *   opens it again.
 * - Retry budget: retries may be at most `retryBudget` of the dependency's attempts in the window
 *   (once the window has `minRequests`), so individually reasonable backoffs cannot add up to a storm.
 *
 * All decisions use Redis' clock (one clock for everyone, S13).
 */
export interface BreakerPolicy {
  windowMs: number;
  bucketMs: number;
  minRequests: number;
  failureRate: number;
  openMs: number;
  probeTimeoutMs: number;
  retryBudget: number;
}

export const DEFAULT_BREAKER_POLICY: BreakerPolicy = {
  windowMs: 60_000,
  bucketMs: 5_000,
  minRequests: 20,
  failureRate: 0.5,
  openMs: 30_000,
  probeTimeoutMs: 60_000,
  retryBudget: 0.2,
};

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Sum ok/fail/attempts/retries over the window's buckets.
const WINDOW = `
local function window(base, nowms, windowMs, bucketMs)
  local ok, fail, attempts, retries = 0, 0, 0, 0
  local first = math.floor((nowms - windowMs) / bucketMs) + 1
  local last = math.floor(nowms / bucketMs)
  for b = first, last do
    local v = redis.call('HMGET', base .. ':w:' .. b, 'ok', 'fail', 'attempts', 'retries')
    ok = ok + (tonumber(v[1]) or 0); fail = fail + (tonumber(v[2]) or 0)
    attempts = attempts + (tonumber(v[3]) or 0); retries = retries + (tonumber(v[4]) or 0)
  end
  return ok, fail, attempts, retries
end`;

// KEYS[1] base, KEYS[2] open set. ARGV: dep, ok(1/0), windowMs, bucketMs, minRequests, failureRate, openMs
const RECORD = `${NOW}
${WINDOW}
local base, openSet, dep = KEYS[1], KEYS[2], ARGV[1]
local ok = ARGV[2] == '1'
local windowMs, bucketMs = tonumber(ARGV[3]), tonumber(ARGV[4])
local bucket = base .. ':w:' .. math.floor(now / bucketMs)
redis.call('HINCRBY', bucket, ok and 'ok' or 'fail', 1)
redis.call('PEXPIRE', bucket, windowMs + bucketMs * 2)
local state = redis.call('HGET', base, 'state') or 'closed'
if state == 'half_open' then
  redis.call('DEL', base .. ':probe')
  if ok then
    redis.call('HSET', base, 'state', 'closed')
    for b = math.floor((now - windowMs) / bucketMs), math.floor(now / bucketMs) do redis.call('HDEL', base .. ':w:' .. b, 'fail') end
    return 'closed'
  end
  redis.call('HSET', base, 'state', 'open', 'open_until', now + tonumber(ARGV[7]))
  redis.call('SADD', openSet, dep)
  return 'opened'
end
if state == 'closed' and not ok then
  local o, f = window(base, now, windowMs, bucketMs)
  if o + f >= tonumber(ARGV[5]) and f / (o + f) >= tonumber(ARGV[6]) then
    redis.call('HSET', base, 'state', 'open', 'open_until', now + tonumber(ARGV[7]))
    redis.call('SADD', openSet, dep)
    return 'opened'
  end
end
return state`;

// Current state, moving open → half_open once the open period (fixed when it opened) has passed.
const STATE = `${NOW}
local base, openSet, dep = KEYS[1], KEYS[2], ARGV[1]
local state = redis.call('HGET', base, 'state') or 'closed'
if state == 'open' and now >= tonumber(redis.call('HGET', base, 'open_until') or '0') then
  redis.call('HSET', base, 'state', 'half_open')
  redis.call('SREM', openSet, dep)
  return 'half_open'
end
return state`;

// Read-only view of several breakers (KEYS: their bases): per key its state and open_until, an open breaker
// past its open period shown as half_open without writing (the next state() or admit() makes it so).
const INSPECT = `${NOW}
local out = {}
for i, base in ipairs(KEYS) do
  local v = redis.call('HMGET', base, 'state', 'open_until')
  local state = v[1] or 'closed'
  local openUntil = tonumber(v[2] or '0')
  if state == 'open' and now >= openUntil then state = 'half_open' end
  out[#out + 1] = state
  out[#out + 1] = state == 'open' and tostring(openUntil) or ''
end
return out`;

// Read-only window figures of several breakers (KEYS: their bases; ARGV: windowMs, bucketMs): per key its state
// (an open one past its open period shown as half_open, as INSPECT does) and the window's ok, fail, attempts
// and retries.
const WINDOW_STATS = `${NOW}
${WINDOW}
local out = {}
for i, base in ipairs(KEYS) do
  local v = redis.call('HMGET', base, 'state', 'open_until')
  local state = v[1] or 'closed'
  if state == 'open' and now >= tonumber(v[2] or '0') then state = 'half_open' end
  local ok, fail, attempts, retries = window(base, now, tonumber(ARGV[1]), tonumber(ARGV[2]))
  out[#out + 1] = state
  out[#out + 1] = ok
  out[#out + 1] = fail
  out[#out + 1] = attempts
  out[#out + 1] = retries
end
return out`;

// Admission of one attempt: ARGV: isRetry(1/0), windowMs, bucketMs, minRequests, retryBudget, probeTimeoutMs
const ADMIT = `${NOW}
${WINDOW}
local base = KEYS[1]
local state = redis.call('HGET', base, 'state') or 'closed'
if state == 'open' then return 'open' end
if state == 'half_open' then
  if not redis.call('SET', base .. ':probe', '1', 'NX', 'PX', tonumber(ARGV[6])) then return 'probe_busy' end
end
local windowMs, bucketMs = tonumber(ARGV[2]), tonumber(ARGV[3])
if ARGV[1] == '1' and state ~= 'half_open' then
  local _, _, attempts, retries = window(base, now, windowMs, bucketMs)
  if attempts >= tonumber(ARGV[4]) and (retries + 1) / (attempts + 1) > tonumber(ARGV[5]) then return 'retry_budget' end
end
local bucket = base .. ':w:' .. math.floor(now / bucketMs)
redis.call('HINCRBY', bucket, 'attempts', 1)
if ARGV[1] == '1' then redis.call('HINCRBY', bucket, 'retries', 1) end
redis.call('PEXPIRE', bucket, windowMs + bucketMs * 2)
return 'allowed'`;

export type BreakerState = "closed" | "open" | "half_open";
/** What record() returns: the state, or "opened" when this outcome is the one that opened it. */
export type RecordResult = BreakerState | "opened";
export type Admission = "allowed" | "open" | "probe_busy" | "retry_budget";
/** A breaker as a reader sees it: its state and, while open, when it half-opens (epoch ms, Redis' clock). */
export interface BreakerView {
  state: BreakerState;
  openUntil: number | null;
}
/** A breaker's state and its sliding window's figures (for metrics: failure rate, retry budget used). */
export interface BreakerWindow {
  state: BreakerState;
  ok: number;
  fail: number;
  attempts: number;
  retries: number;
}

/** Whose breaker: a tenant's dependency (a job's dependency_key). */
export interface BreakerKey {
  tenantId: string;
  dependency: string;
}

/** A breaker's name in Redis: the tenant, then the dependency (a tenant ID has no "/"). */
const nameOf = (key: BreakerKey) => `${key.tenantId}/${key.dependency}`;
const keyOf = (name: string): BreakerKey | null => {
  const slash = name.indexOf("/");
  return slash > 0 ? { tenantId: name.slice(0, slash), dependency: name.slice(slash + 1) } : null;
};

type Scripts = Redis & {
  tickBreakerRecord(base: string, openSet: string, ...args: (string | number)[]): Promise<RecordResult>;
  tickBreakerState(base: string, openSet: string, ...args: (string | number)[]): Promise<BreakerState>;
  tickBreakerAdmit(base: string, ...args: (string | number)[]): Promise<Admission>;
  tickBreakerInspect(numberOfKeys: number, ...bases: string[]): Promise<string[]>;
  tickBreakerWindowStats(numberOfKeys: number, ...args: (string | number)[]): Promise<(string | number)[]>;
};

export function createBreakers(options: { redis: Redis; prefix: string; policy?: Partial<BreakerPolicy> }) {
  const policy = { ...DEFAULT_BREAKER_POLICY, ...options.policy };
  const r = options.redis as Scripts;
  if (typeof r.tickBreakerRecord !== "function") {
    r.defineCommand("tickBreakerRecord", { numberOfKeys: 2, lua: RECORD });
    r.defineCommand("tickBreakerState", { numberOfKeys: 2, lua: STATE });
    r.defineCommand("tickBreakerAdmit", { numberOfKeys: 1, lua: ADMIT });
  }
  // Defined apart: a client set up by an older build of this package has the other three already.
  if (typeof r.tickBreakerInspect !== "function") r.defineCommand("tickBreakerInspect", { lua: INSPECT });
  if (typeof r.tickBreakerWindowStats !== "function") r.defineCommand("tickBreakerWindowStats", { lua: WINDOW_STATS });
  const base = (key: BreakerKey) => `${options.prefix}:breaker:${nameOf(key)}`;
  const openSet = `${options.prefix}:breakers:open`;
  const stateOf = (key: BreakerKey) => r.tickBreakerState(base(key), openSet, nameOf(key));

  return {
    policy,
    /** Before an attempt runs: may it? (counts it toward the retry budget when allowed). */
    async admit(key: BreakerKey, isRetry: boolean): Promise<Admission> {
      await stateOf(key); // lets open → half_open happen
      return r.tickBreakerAdmit(base(key), isRetry ? 1 : 0, policy.windowMs, policy.bucketMs, policy.minRequests, policy.retryBudget, policy.probeTimeoutMs);
    },
    /** An admitted attempt that did not run after all (stale message, lost lease): free the half-open probe slot. */
    async release(key: BreakerKey): Promise<void> {
      await options.redis.del(`${base(key)}:probe`);
    },
    /** After an attempt: success, or a failure that says the dependency is unwell (5xx, 429, timeouts). */
    async record(key: BreakerKey, ok: boolean): Promise<RecordResult> {
      return r.tickBreakerRecord(base(key), openSet, nameOf(key), ok ? 1 : 0, policy.windowMs, policy.bucketMs, policy.minRequests, policy.failureRate, policy.openMs);
    },
    async state(key: BreakerKey): Promise<BreakerState> {
      return stateOf(key);
    },
    /**
     * The breakers of these dependencies of one tenant as they stand, in one round trip and without changing
     * any (for display: the console's dependency list), by dependency. A dependency never seen is closed.
     */
    async inspect(tenantId: string, dependencies: readonly string[]): Promise<Map<string, BreakerView>> {
      if (dependencies.length === 0) return new Map();
      const flat = await r.tickBreakerInspect(dependencies.length, ...dependencies.map((dependency) => base({ tenantId, dependency })));
      return new Map(dependencies.map((d, i) => [d, { state: flat[2 * i] as BreakerState, openUntil: flat[2 * i + 1] ? Number(flat[2 * i + 1]) : null }]));
    },
    /**
     * These breakers' states and their windows' figures (outcomes, attempts, retries), in one round trip and
     * without changing any, in the order given (for the worker's metrics). A breaker never used is closed and empty.
     */
    async windowStats(keys: readonly BreakerKey[]): Promise<BreakerWindow[]> {
      if (keys.length === 0) return [];
      const flat = await r.tickBreakerWindowStats(keys.length, ...keys.map(base), policy.windowMs, policy.bucketMs);
      return keys.map((_, i) => ({
        state: flat[5 * i] as BreakerState,
        ok: Number(flat[5 * i + 1]),
        fail: Number(flat[5 * i + 2]),
        attempts: Number(flat[5 * i + 3]),
        retries: Number(flat[5 * i + 4]),
      }));
    },
    /** The breakers open now, every tenant's (schedulers hold their jobs). */
    async openDependencies(): Promise<BreakerKey[]> {
      const names = await options.redis.smembers(openSet);
      const keys = names.map(keyOf);
      // A name without a tenant is from a build whose breakers were shared by tenants: no longer consulted.
      const stale = names.filter((_, i) => keys[i] === null);
      if (stale.length > 0) await options.redis.srem(openSet, ...stale);
      const live = keys.filter((k): k is BreakerKey => k !== null);
      const states = await Promise.all(live.map(stateOf));
      return live.filter((_, i) => states[i] === "open");
    },
  };
}

/** Open breakers by tenant: the dependencies whose jobs a tenant's claim holds. */
export function heldByTenant(open: readonly BreakerKey[]): Map<string, string[]> {
  const held = new Map<string, string[]>();
  for (const k of open) held.set(k.tenantId, [...(held.get(k.tenantId) ?? []), k.dependency]);
  return held;
}

export type Breakers = ReturnType<typeof createBreakers>;
