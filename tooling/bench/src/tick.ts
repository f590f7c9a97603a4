import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { childTraceContext, formatTraceparent } from "@tick/core";
import { createDueIndex } from "@tick/due-index";
import { createPool, shardForTenant, sql } from "@tick/db";
import { newTestJob } from "@tick/db/testing";
import { freePort, startProcess, type RunningProcess } from "@tick/testing";
import { Redis } from "ioredis";
import type pg from "pg";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

export interface TickTenant {
  id: string;
  queueId: string;
  shard: number;
}

/** Tick as it runs in production: scheduler and worker processes (dist builds) on a database and a Redis prefix. */
export interface TickCluster {
  pool: pg.Pool;
  redis: Redis;
  prefix: string;
  shards: number;
  processes: { name: string; proc: RunningProcess; healthPort: number }[];
  createTenant(options?: { weight?: number; maxInFlight?: number; shard?: number }): Promise<TickTenant>;
  /**
   * Creates jobs through the same statement and due-index note as the API (no HTTP in front), as a create
   * without an Idempotency-Key header does; `key` goes in the body, where the sink reads it.
   */
  createJobs(tenant: TickTenant, jobs: { key: string; url: string; runAt?: Date }[]): Promise<void>;
  /** Tells the due index the tenant has work due at `at` (default now), after jobs were inserted by other means. */
  noteDue(tenant: TickTenant, at?: number): Promise<void>;
  startScheduler(env?: Record<string, string>): Promise<void>;
  startWorker(env?: Record<string, string>): Promise<void>;
  /** Resident memory of each process, from its own /metrics (process_resident_memory_bytes). */
  memory(): Promise<Record<string, number>>;
  stopProcesses(): Promise<void>;
  close(): Promise<void>;
}

export async function startTickCluster(options: { databaseUrl: string; redisUrl: string; shards?: number; env?: Record<string, string>; prefix?: string }): Promise<TickCluster> {
  const shards = options.shards ?? 16;
  const prefix = options.prefix ?? `tick-bench:${randomUUID().slice(0, 8)}`;
  const pool = createPool(options.databaseUrl, { max: 8 });
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 2 });
  const dueIndex = createDueIndex({ redis, prefix });
  const processes: TickCluster["processes"] = [];
  const baseEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    TICK_REDIS_PREFIX: prefix,
    TICK_SHARDS: String(shards),
    TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8",
    LOG_LEVEL: "warn",
    NODE_ENV: "production",
    ...options.env,
  };
  const launch = async (role: "scheduler" | "worker", env: Record<string, string>) => {
    const n = processes.filter((p) => p.name.startsWith(role)).length + 1;
    const name = `${role}-${n}`;
    const healthPort = await freePort();
    const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const proc = startProcess(process.execPath, [...profile, path.join(root, "apps", role, "dist/main.js")], {
      env: { ...baseEnv, ...env, [role === "scheduler" ? "SCHEDULER_HEALTH_PORT" : "WORKER_HEALTH_PORT"]: String(healthPort), [role === "scheduler" ? "SCHEDULER_ID" : "WORKER_ID"]: name },
    });
    processes.push({ name, proc, healthPort });
    const deadline = Date.now() + 60_000;
    while (!(await fetch(`http://127.0.0.1:${healthPort}/healthz`).catch(() => null))?.ok) {
      if (proc.child.exitCode !== null) throw new Error(`${name} exited: ${proc.output().slice(-800)}`);
      if (Date.now() > deadline) throw new Error(`${name} not ready in 60 s: ${proc.output().slice(-800)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const stopProcesses = async () => {
    for (const p of processes.splice(0)) await p.proc.stop(10_000);
  };
  return {
    pool,
    redis,
    prefix,
    shards,
    processes,
    async createTenant(t = {}) {
      // A tenant on a chosen shard (fairness between tenants is decided per shard) or wherever its ID falls.
      let id = randomUUID();
      while (t.shard !== undefined && shardForTenant(id, shards) !== t.shard) id = randomUUID();
      const shard = shardForTenant(id, shards);
      const queueId = randomUUID();
      await pool.query(
        `INSERT INTO tenants (id, slug, name, shard, weight, admission_rate, admission_burst, max_pending_jobs, max_in_flight, updated_at)
         VALUES ($1, $2, $2, $3, $4, 1000000, 1000000, 10000000, $5, now())`,
        [id, `bench-${id.slice(0, 8)}`, shard, t.weight ?? 1, t.maxInFlight ?? 1_000],
      );
      await pool.query(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES ($1, $2, 'default', now())`, [queueId, id]);
      return { id, queueId, shard };
    },
    async createJobs(tenant, jobs) {
      for (let i = 0; i < jobs.length; i += 1_000) {
        const chunk = jobs.slice(i, i + 1_000).map(
          // No create-time dedup key (the fixture has none): the peers' jobs get none (pg-boss's singletonKey,
          // graphile-worker's jobKey, BullMQ's jobId are all unset), so neither do Tick's. The call still carries the
          // job's stable Idempotency-Key (tick-job-<id>, S6); what a key costs at create is the api-ingest scenario's.
          (j) =>
            newTestJob(tenant.queueId, {
              run_at: j.runAt ? j.runAt.toISOString() : null,
              url: j.url,
              body: JSON.stringify({ key: j.key }),
              timeout_ms: 10_000,
              traceparent: formatTraceparent(childTraceContext(null)),
            }),
        );
        const created = await sql.insertJobs(pool, tenant, chunk, 24 * 3_600_000);
        if (created.length) await dueIndex.noteDue(tenant.shard, tenant.id, Math.min(...created.map((r) => r.due_at.getTime())));
      }
    },
    noteDue: (tenant, at) => dueIndex.noteDue(tenant.shard, tenant.id, at ?? Date.now()),
    startScheduler: (env = {}) => launch("scheduler", env),
    startWorker: (env = {}) => launch("worker", env),
    async memory() {
      const out: Record<string, number> = {};
      for (const p of processes) {
        if (p.proc.child.exitCode !== null) continue;
        const text = await fetch(`http://127.0.0.1:${p.healthPort}/metrics`).then((r) => r.text()).catch(() => "");
        const m = /^process_resident_memory_bytes(?:\{[^}]*\})? (\d+)/m.exec(text);
        if (m) out[p.name] = Number(m[1]);
      }
      return out;
    },
    stopProcesses,
    async close() {
      await stopProcesses();
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        cursor = next;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== "0");
      redis.disconnect();
      await pool.end();
    },
  };
}

/** Jobs of a tenant not finished yet (scheduled, dispatched or running). */
export async function liveJobs(pool: pg.Pool, tenantId?: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running') AND ($1::uuid IS NULL OR tenant_id = $1)`,
    [tenantId ?? null],
  );
  return rows[0]!.n;
}
