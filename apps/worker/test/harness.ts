import { afterEach, beforeEach } from "vitest";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import type pg from "pg";
import { dependencyOf } from "@tick/core";
import { createDueIndex } from "@tick/due-index";
import { createPool, sql } from "@tick/db";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { createTestRedis, startProcess, startSink, waitFor, type RunningProcess, type Sink, type TestRedis } from "@tick/testing";

const appsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
let nextPort = 19_400 + Math.floor(Math.random() * 500) * 2;

export interface ProcessWorld {
  db: TestDatabase;
  pool: pg.Pool;
  redis: TestRedis;
  startScheduler(env?: Record<string, string>): Promise<RunningProcess & { healthPort: number }>;
  startWorker(env?: Record<string, string>): Promise<RunningProcess & { healthPort: number }>;
  createTenant(): Promise<{ id: string; queueId: string; shard: number }>;
  /** Creates a job as the API would (row, then the due-index note), due now. */
  createJob(
    tenant: { id: string; queueId: string; shard: number },
    url: string,
    options?: { maxAttempts?: number; idempotencyKey?: string; callbackUrl?: string; expiresInMs?: number; headers?: Record<string, string>; traceparent?: string; tracestate?: string },
  ): Promise<string>;
  job(id: string): Promise<{ status: string; attempt_count: number; version: number }>;
  attempts(jobId: string): Promise<{ id: string; status: string; fencing_token: string; late_completions: number }[]>;
  close(): Promise<void>;
}

const FAST = {
  LOG_LEVEL: "warn",
  TICK_SHARDS: "4",
  SCHEDULER_LEASE_TTL: "2s",
  SCHEDULER_LEASE_RENEW_INTERVAL: "500ms",
  SCHEDULER_DISPATCH_INTERVAL: "50ms",
  SCHEDULER_REAPER_INTERVAL: "200ms",
  SCHEDULER_LEASE_GRACE: "0ms",
  SCHEDULER_RECONCILE_INTERVAL: "1s",
  WORKER_LEASE_TTL: "1500ms",
  WORKER_HEARTBEAT_INTERVAL: "500ms",
  WORKER_WEBHOOK_RETRY_BASE: "100ms",
  TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8",
};

export async function createProcessWorld(): Promise<ProcessWorld> {
  const db = await createTestDatabase(testServerUrl());
  const pool = createPool(db.url, { max: 5 });
  const redis = createTestRedis();
  const indexRedis = new Redis(redis.url);
  const dueIndex = createDueIndex({ redis: indexRedis, prefix: redis.prefix });
  const processes: RunningProcess[] = [];
  const baseEnv = { ...process.env, ...FAST, DATABASE_URL: db.url, REDIS_URL: redis.url, TICK_REDIS_PREFIX: redis.prefix };

  const start = async (app: "scheduler" | "worker", env: Record<string, string>) => {
    const healthPort = nextPort++;
    const portVar = app === "scheduler" ? "SCHEDULER_HEALTH_PORT" : "WORKER_HEALTH_PORT";
    const proc = startProcess(process.execPath, [path.join(appsDir, app, "dist/main.js")], {
      env: { ...baseEnv, [portVar]: String(healthPort), ...env },
    });
    processes.push(proc);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => null))?.ok, {
      timeoutMs: 30_000,
      description: `${app} ready (output: ${proc.output().slice(-400)})`,
    });
    return Object.assign(proc, { healthPort });
  };

  return {
    db,
    pool,
    redis,
    startScheduler: (env = {}) => start("scheduler", env),
    startWorker: (env = {}) => start("worker", env),
    async createTenant() {
      const { id, queueId, shard } = await createTestTenant(pool, { shardCount: 4 });
      return { id, queueId, shard };
    },
    async createJob(tenant, url, options = {}) {
      const [row] = await sql.insertJobs(pool, tenant, [
        newTestJob(tenant.queueId, {
          expires_at: options.expiresInMs === undefined ? null : new Date(Date.now() + options.expiresInMs).toISOString(),
          idempotency_key: options.idempotencyKey ?? null,
          request_hash: options.idempotencyKey ? "test" : null,
          url,
          headers: options.headers ?? {},
          body: "{}",
          max_attempts: options.maxAttempts ?? 5,
          backoff: { strategy: "fixed", baseMs: 100, maxMs: 100, jitter: "none" },
          dependency_key: dependencyOf(url, null),
          callback_url: options.callbackUrl ?? null,
          traceparent: options.traceparent ?? null,
          tracestate: options.tracestate ?? null,
        }),
      ], 86_400_000);
      await dueIndex.noteDue(tenant.shard, tenant.id, row!.due_at.getTime());
      return row!.id;
    },
    async job(id) {
      return (await pool.query<{ status: string; attempt_count: number; version: number }>(`SELECT status, attempt_count, version FROM jobs WHERE id = $1`, [id])).rows[0]!;
    },
    async attempts(jobId) {
      return (await pool.query<{ id: string; status: string; fencing_token: string; late_completions: number }>(`SELECT id, status, fencing_token::text, late_completions FROM attempts WHERE job_id = $1 ORDER BY fencing_token`, [jobId])).rows;
    },
    async close() {
      for (const p of processes) {
        try {
          p.child.kill("SIGCONT");
        } catch {
          // already gone
        }
        await p.stop(5_000);
      }
      indexRedis.disconnect();
      await pool.end();
      await redis.cleanup().catch(() => {});
      await db.drop();
    },
  };
}

/** Sum of a Prometheus counter from a process's /metrics. */
export async function metricValue(healthPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(name))
    .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

/** A fresh process world and recording sink for every test of the file, closed after it; `use` receives them. */
export function useProcessWorld(use: (world: ProcessWorld, sink: Sink) => void): void {
  let world: ProcessWorld | undefined;
  let sink: Sink | undefined;
  beforeEach(async () => {
    world = await createProcessWorld();
    sink = await startSink();
    use(world, sink);
  });
  afterEach(async () => {
    await world?.close();
    await sink?.close();
  });
}
