import path from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, type RunningProcess } from "@tick/testing";
import { Queue } from "bullmq";
import { makeWorkerUtils } from "graphile-worker";
import { Redis } from "ioredis";
import pg from "pg";
import PgBoss from "pg-boss";

export const PEERS = ["graphile-worker", "pg-boss", "bullmq"] as const;
export type Peer = (typeof PEERS)[number];
/** The same HTTP calls with no queue at all: the physical ceiling for HTTP jobs on this machine. */
export const CEILING = "http-client";

// The built script, whether this module runs from dist/ (npm run bench) or from src/ (vitest).
const workerScript = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/peer-worker.js");
const QUEUE = "bench";

/**
 * A peer set up to burn down jobs like Tick: its worker in its own process (peer-worker.ts), its jobs
 * enqueued from here with its own batch API, and a way to ask how many are left.
 */
export interface PeerSystem {
  name: Peer;
  enqueue(jobs: { key: string; url: string }[]): Promise<void>;
  remaining(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The bare client: one process with the peers' undici pool and concurrency, calling the sink for each job
 * as soon as `enqueue` signals it (SIGUSR2), with no store in between. `remaining` is always 0: the run is
 * over when the sink has seen every key.
 */
export async function startBareClient(options: { jobs: number; url: string; concurrency: number }): Promise<Omit<PeerSystem, "name">> {
  const proc = startProcess(process.execPath, [workerScript], {
    env: { ...(process.env as Record<string, string>), BENCH_SYSTEM: CEILING, BENCH_CONCURRENCY: String(options.concurrency), BENCH_JOBS: String(options.jobs), BENCH_URL: options.url },
  });
  await waitReady(proc, CEILING);
  return {
    async enqueue() {
      proc.child.kill("SIGUSR2");
    },
    remaining: async () => 0,
    close: async () => void (await proc.stop(10_000)),
  };
}

/**
 * The pool that counts a peer's remaining jobs. Its idle connection can be terminated by the database drop
 * after the run (seen once on a loaded machine: an unhandled 'error' event ended the whole bench); that error
 * is not the peer's and is ignored.
 */
function countingPool(databaseUrl: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  pool.on("error", () => {});
  return pool;
}

async function waitReady(proc: RunningProcess, name: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!proc.output().includes("ready\n")) {
    if (proc.child.exitCode !== null) throw new Error(`${name} worker exited: ${proc.output().slice(-800)}`);
    if (Date.now() > deadline) throw new Error(`${name} worker not ready in 60 s: ${proc.output().slice(-800)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startPeer(name: Peer, options: { databaseUrl: string; redisUrl: string; concurrency: number }): Promise<PeerSystem> {
  const prefix = `bench-bull-${Math.random().toString(36).slice(2, 8)}`;
  const env = {
    ...(process.env as Record<string, string>),
    BENCH_SYSTEM: name,
    BENCH_QUEUE: QUEUE,
    BENCH_CONCURRENCY: String(options.concurrency),
    BENCH_REDIS_PREFIX: prefix,
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
  };
  const startWorker = async (): Promise<RunningProcess> => {
    const proc = startProcess(process.execPath, [workerScript], { env });
    await waitReady(proc, name);
    return proc;
  };

  if (name === "graphile-worker") {
    const worker = await startWorker(); // installs its schema
    const utils = await makeWorkerUtils({ connectionString: options.databaseUrl });
    const pool = countingPool(options.databaseUrl);
    return {
      name,
      async enqueue(jobs) {
        for (let i = 0; i < jobs.length; i += 1_000) await utils.addJobs(jobs.slice(i, i + 1_000).map((payload) => ({ identifier: QUEUE, payload })));
      },
      remaining: async () => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM graphile_worker._private_jobs`)).rows[0]!.n,
      async close() {
        await worker.stop(10_000);
        await utils.release();
        await pool.end();
      },
    };
  }
  if (name === "pg-boss") {
    const boss = new PgBoss({ connectionString: options.databaseUrl, max: 2, supervise: false, schedule: false });
    boss.on("error", () => {});
    await boss.start(); // installs its schema
    await boss.createQueue(QUEUE);
    const worker = await startWorker();
    const pool = countingPool(options.databaseUrl);
    return {
      name,
      async enqueue(jobs) {
        for (let i = 0; i < jobs.length; i += 1_000) await boss.insert(jobs.slice(i, i + 1_000).map((data) => ({ name: QUEUE, data })));
      },
      remaining: async () =>
        (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`, [QUEUE])).rows[0]!.n,
      async close() {
        await worker.stop(10_000);
        await boss.stop({ graceful: false, wait: true });
        await pool.end();
      },
    };
  }
  const connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  const worker = await startWorker();
  return {
    name,
    async enqueue(jobs) {
      for (let i = 0; i < jobs.length; i += 1_000) {
        await queue.addBulk(jobs.slice(i, i + 1_000).map((data) => ({ name: QUEUE, data, opts: { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 1_000 } } })));
      }
    },
    async remaining() {
      const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized");
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    async close() {
      await worker.stop(10_000);
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      connection.disconnect();
    },
  };
}
