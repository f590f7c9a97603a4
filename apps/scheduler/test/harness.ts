import { PassThrough } from "node:stream";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import type pg from "pg";
import { Registry } from "prom-client";
import { ATTEMPT_QUEUE } from "@tick/core";
import { createPool } from "@tick/db";
import { createTestDatabase, createTestTenant, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { createLogger, parseFaultPoints } from "@tick/runtime";
import { createTestRedis, type TestRedis } from "@tick/testing";
import { createScheduler, type Scheduler, type SchedulerConfig } from "../src/scheduler.js";

export const SHARDS = 4;

export interface World {
  db: TestDatabase;
  pool: pg.Pool;
  redis: TestRedis;
  schedulers: Scheduler[];
  attemptsQueue: Queue;
  startScheduler(id: string, overrides?: Partial<SchedulerConfig>, options?: { redisUrl?: string; faults?: string }): Scheduler;
  createTenant(options?: { weight?: number; maxInFlight?: number }): Promise<{ id: string; queueId: string; shard: number }>;
  /** Inserts `count` jobs due `dueInMs` from the database's now (negative: overdue). */
  insertJobs(tenant: { id: string; queueId: string; shard: number }, count: number, options?: { dueInMs?: number; priority?: number; expiresInMs?: number }): Promise<void>;
  close(): Promise<void>;
}

const quietLogger = () =>
  process.env.TICK_TEST_LOG ? createLogger({ name: "scheduler-test", level: process.env.TICK_TEST_LOG, destination: process.stderr }) : createLogger({ name: "scheduler-test", level: "silent", destination: new PassThrough() });

export async function createWorld(): Promise<World> {
  const db = await createTestDatabase(testServerUrl());
  const pool = createPool(db.url, { max: 20 });
  const redis = createTestRedis();
  const connections: Redis[] = [];
  const schedulers: Scheduler[] = [];
  const bullConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
  connections.push(bullConnection);
  const attemptsQueue = new Queue(ATTEMPT_QUEUE, { connection: bullConnection, prefix: `${redis.prefix}:bull` });

  return {
    db,
    pool,
    redis,
    schedulers,
    attemptsQueue,
    startScheduler(id, overrides = {}, options = {}) {
      const connection = new Redis(options.redisUrl ?? redis.url, { maxRetriesPerRequest: null });
      connection.on("error", () => {});
      connections.push(connection);
      const indexConnection = new Redis(options.redisUrl ?? redis.url, { maxRetriesPerRequest: 1, commandTimeout: 500 });
      indexConnection.on("error", () => {});
      connections.push(indexConnection);
      const scheduler = createScheduler({
        pool,
        redis: connection,
        indexRedis: indexConnection,
        logger: quietLogger(),
        registry: new Registry(),
        faults: parseFaultPoints(options.faults),
        config: {
          id,
          region: "test",
          redisPrefix: redis.prefix,
          shardCount: SHARDS,
          // Long by default: most tests drive rounds by hand, without the renewal loop. The takeover
          // test passes a short TTL explicitly.
          leaseTtlMs: 30_000,
          leaseRenewIntervalMs: 5_000,
          dispatchIntervalMs: 50,
          dispatchBatch: 500,
          maxQueuedPerShard: 100_000,
          dispatchRatePerSecond: 1_000_000,
          relayRatePerSecond: 1_000_000,
          reaperIntervalMs: 500,
          leaseGraceMs: 0,
          strandedAfterMs: 60_000,
          publishTimeoutMs: 1_000,
          reconcileIntervalMs: 1_000,
          recurrenceLookaheadMs: 0,
          recurrenceIntervalMs: 100,
          replayIntervalMs: 100,
          idempotencyTtlMs: 86_400_000,
          ...overrides,
        },
      });
      schedulers.push(scheduler);
      return scheduler;
    },
    async createTenant(options = {}) {
      const { id, queueId, shard } = await createTestTenant(pool, { shardCount: SHARDS, weight: options.weight ?? 1, maxInFlight: options.maxInFlight ?? 1_000_000 });
      return { id, queueId, shard };
    },
    async insertJobs(tenant, count, options = {}) {
      await pool.query(
        `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, priority, expires_at, url, updated_at)
         SELECT gen_random_uuid(), $1, $2, $3, now() + make_interval(secs => $5 / 1000.0), $6,
                CASE WHEN $7::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $7 / 1000.0) END,
                'https://93.184.216.34/x', now()
           FROM generate_series(1, $4)`,
        [tenant.id, tenant.queueId, tenant.shard, count, options.dueInMs ?? 0, options.priority ?? 0, options.expiresInMs ?? null],
      );
    },
    async close() {
      for (const s of schedulers) await s.stop().catch(() => {});
      await attemptsQueue.close();
      for (const c of connections) c.disconnect();
      await pool.end();
      await redis.cleanup().catch(() => {});
      await db.drop();
    },
  };
}

/** Jobs per status, for assertions. */
export async function statusCounts(pool: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM jobs GROUP BY status`);
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}
