import type { Redis } from "ioredis";

/**
 * The Redis due-time index (the fast path; S9). Per shard, one sorted set maps each tenant with
 * scheduled work to the instant (ms) its earliest job is due, and one hash holds a write generation
 * per tenant. It only says where to look: every candidate is still claimed conditionally in Postgres.
 * It is disposable: a `built` marker per shard is set after a full rebuild from Postgres; if the
 * marker is missing (flush, restart, failover) the scheduler polls Postgres and rebuilds.
 *
 * Writers (job creation, retries, replays) call noteDue after their commit: it lowers the tenant's
 * score (never raises it) and bumps the tenant's generation. The dispatcher, after claiming for a
 * tenant, raises the score to the tenant's next due time only if no writer touched the tenant since it
 * read the generation, so a job created meanwhile is never hidden behind a later score.
 */
const NOTE_DUE = `
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
`;

const SETTLE = `
local gen = redis.call('HGET', KEYS[2], ARGV[1])
if (gen or '0') ~= ARGV[2] then return 0 end
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
`;

// Uses Redis' own clock, so callers never compare their clock with another node's (S13).
const DUE_TENANTS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
`;

const NEXT_DUE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local best = -1
for i = 1, #KEYS do
  local next = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. (now - tonumber(ARGV[2])), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if next[2] then
    local wait = math.max(0, tonumber(next[2]) - now)
    if best < 0 or wait < best then best = wait end
  end
end
return best
`;

const SHARDS_TO_VISIT = `
local t = redis.call('TIME')
local due = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i + 1]) == 0 or redis.call('ZCOUNT', KEYS[i], '-inf', due) > 0 then
    table.insert(out, (i + 1) / 2)
  end
end
return out
`;

const FINISH_REBUILD = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1])
return 1
`;

type Scripts = Redis & {
  tickFinishRebuild(rebuilding: string, built: string, token: string): Promise<number>;
  tickNoteDue(zset: string, gens: string, tenant: string, dueMs: number): Promise<number>;
  tickSettleDue(zset: string, gens: string, tenant: string, gen: string, nextMs: string): Promise<number>;
  tickDueTenants(zset: string, leewayMs: number, limit: number): Promise<string[]>;
  /** numberOfKeys first (defined without a fixed count), then the keys, then the offset. */
  tickNextDue(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
  tickShardsToVisit(numberOfKeys: number, ...args: (string | number)[]): Promise<number[]>;
};

export interface DueIndexOptions {
  redis: Redis;
  prefix: string;
}

export function createDueIndex({ redis, prefix }: DueIndexOptions) {
  const r = redis as Scripts;
  if (typeof r.tickNoteDue !== "function") {
    r.defineCommand("tickNoteDue", { numberOfKeys: 2, lua: NOTE_DUE });
    r.defineCommand("tickSettleDue", { numberOfKeys: 2, lua: SETTLE });
    r.defineCommand("tickDueTenants", { numberOfKeys: 1, lua: DUE_TENANTS });
    r.defineCommand("tickFinishRebuild", { numberOfKeys: 2, lua: FINISH_REBUILD });
    r.defineCommand("tickNextDue", { lua: NEXT_DUE });
    r.defineCommand("tickShardsToVisit", { lua: SHARDS_TO_VISIT });
  }
  const keys = (shard: number) => ({
    zset: `${prefix}:due:${shard}:tenants`,
    gens: `${prefix}:due:${shard}:gen`,
    built: `${prefix}:due:${shard}:built`,
    rebuilding: `${prefix}:due:${shard}:rebuilding`,
  });

  return {
    /** After a commit that made a job of this tenant due at `dueAtMs` (or later). */
    async noteDue(shard: number, tenantId: string, dueAtMs: number): Promise<void> {
      const k = keys(shard);
      await r.tickNoteDue(k.zset, k.gens, tenantId, Math.floor(dueAtMs));
    },
    /** Redis' clock (ms). Scores are database times: callers add the database's offset as `leewayMs`. */
    async redisTimeMs(): Promise<number> {
      const [sec, micro] = await redis.time();
      return Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
    },
    /** Tenants whose earliest job is due now (by Redis' clock, plus `leewayMs`). */
    async dueTenants(shard: number, limit: number, leewayMs = 0): Promise<string[]> {
      return r.tickDueTenants(keys(shard).zset, leewayMs, limit);
    },
    /** Read before asking Postgres for the tenant's next due time. */
    async generation(shard: number, tenantId: string): Promise<string> {
      return (await redis.hget(keys(shard).gens, tenantId)) ?? "0";
    },
    /** Sets the tenant's next due time (null: nothing scheduled) unless a writer touched it since `generation`. */
    async settle(shard: number, tenantId: string, generation: string, nextDueMs: number | null): Promise<boolean> {
      const k = keys(shard);
      return (await r.tickSettleDue(k.zset, k.gens, tenantId, generation, nextDueMs === null ? "" : String(Math.floor(nextDueMs)))) === 1;
    },
    async isBuilt(shard: number): Promise<boolean> {
      return (await redis.exists(keys(shard).built)) === 1;
    },
    /** Starts a rebuild; the token proves at the end that nothing (a flush) wiped Redis meanwhile. */
    async beginRebuild(shard: number): Promise<string> {
      const token = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
      await redis.set(keys(shard).rebuilding, token);
      return token;
    },
    /** Marks the shard's index complete, unless Redis lost the rebuild's marker (then rebuild again). */
    async finishRebuild(shard: number, token: string): Promise<boolean> {
      const k = keys(shard);
      return (await r.tickFinishRebuild(k.rebuilding, k.built, token)) === 1;
    },
    /**
     * How long until the next due time (database ms) noted in any of these shards' indexes, by Redis' clock
     * plus `offsetMs` (the database's lead on Redis): 0 for one that fell due within the last `recentMs`
     * (a job that fell due while the dispatcher's last round ran); null when none lies ahead. Tenants due
     * longer ago are left out: the dispatcher has had rounds since, so one still listed is held (its
     * in-flight cap, a paused queue, an open breaker) and must not keep it spinning.
     */
    async msUntilNextDue(shards: readonly number[], offsetMs: number, recentMs = 0): Promise<number | null> {
      if (shards.length === 0) return null;
      const wait = await r.tickNextDue(shards.length, ...shards.map((shard) => keys(shard).zset), offsetMs, recentMs);
      return wait < 0 ? null : wait;
    },
    /**
     * Of these shards, the ones a dispatch round must visit, in one round trip: those whose index lists a
     * tenant due by Redis' clock plus `leewayMs`, and those whose index is not built (they poll Postgres).
     */
    async shardsToVisit(shards: readonly number[], leewayMs: number): Promise<number[]> {
      if (shards.length === 0) return [];
      const keyPairs = shards.flatMap((shard) => [keys(shard).zset, keys(shard).built]);
      const positions = await r.tickShardsToVisit(keyPairs.length, ...keyPairs, Math.round(leewayMs));
      return positions.map((p) => shards[p - 1]!);
    },
    /** Every tenant in the index of a shard with its score (for reconciliation). */
    async entries(shard: number): Promise<Map<string, number>> {
      const flat = await redis.zrange(keys(shard).zset, 0, -1, "WITHSCORES");
      const out = new Map<string, number>();
      for (let i = 0; i < flat.length; i += 2) out.set(flat[i]!, Number(flat[i + 1]));
      return out;
    },
  };
}

export type DueIndex = ReturnType<typeof createDueIndex>;
