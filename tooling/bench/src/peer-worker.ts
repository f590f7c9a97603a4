import { Worker } from "bullmq";
import { Logger as GraphileLogger, run as runGraphile } from "graphile-worker";
import { Redis } from "ioredis";
import PgBoss from "pg-boss";
import { Agent, request } from "undici";

/**
 * One peer's worker process, doing exactly what Tick's worker does per job: POST the job's body to the
 * sink with undici's `request` over a keep-alive pool (the same client Tick's worker uses), read the
 * answer, fail on a non-2xx. Configured by env: BENCH_SYSTEM (graphile-worker | pg-boss | bullmq),
 * DATABASE_URL or REDIS_URL, BENCH_CONCURRENCY, BENCH_QUEUE, BENCH_REDIS_PREFIX. Prints "ready" once it
 * takes work; stops on SIGTERM.
 *
 * BENCH_SYSTEM=http-client is the ceiling with no queue at all: the same calls (BENCH_JOBS of them to
 * BENCH_URL, keys http-client-0..n-1) with the same pool and concurrency, started on SIGUSR2.
 */

const system = process.env.BENCH_SYSTEM ?? "";
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 50);
const queue = process.env.BENCH_QUEUE ?? "bench";
const agent = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });

interface PeerPayload {
  url: string;
  key: string;
}

async function call(payload: PeerPayload): Promise<void> {
  const res = await request(payload.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key: payload.key }),
    dispatcher: agent,
  });
  await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
}

async function main() {
  let stop: () => Promise<void>;
  if (system === "graphile-worker") {
    const runner = await runGraphile({
      connectionString: process.env.DATABASE_URL!,
      concurrency,
      maxPoolSize: concurrency + 2,
      noHandleSignals: true,
      pollInterval: 1_000,
      logger: new GraphileLogger(() => () => {}),
      taskList: { [queue]: async (payload) => call(payload as PeerPayload) },
      // Its fastest documented settings: a local queue of locked jobs (batched claims) and batched completions.
      preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    });
    stop = () => runner.stop();
  } else if (system === "pg-boss") {
    const boss = new PgBoss({ connectionString: process.env.DATABASE_URL!, max: 10, supervise: false, schedule: false });
    boss.on("error", () => {});
    await boss.start();
    // Batched fetch and completion in tight loops (its `work` waits its polling interval, at least 0.5 s,
    // between batches, which caps it at batch/0.5 s per loop): each loop fetches up to 25, calls them all,
    // completes or fails them in one call each, and fetches again at once while there is work.
    let running = true;
    const loops: Promise<void>[] = [];
    for (let i = 0; i < 2; i++) {
      loops.push(
        (async () => {
          while (running) {
            const jobs = await boss.fetch<PeerPayload>(queue, { batchSize: Math.ceil(concurrency / 2) }).catch(() => []);
            if (jobs.length === 0) {
              await new Promise((r) => setTimeout(r, 50));
              continue;
            }
            const outcomes = await Promise.allSettled(jobs.map((j) => call(j.data)));
            const done = jobs.filter((_, k) => outcomes[k]!.status === "fulfilled").map((j) => j.id);
            const failed = jobs.filter((_, k) => outcomes[k]!.status === "rejected").map((j) => j.id);
            if (done.length) await boss.complete(queue, done);
            if (failed.length) await boss.fail(queue, failed);
          }
        })(),
      );
    }
    stop = async () => {
      running = false;
      await Promise.all(loops);
      await boss.stop({ graceful: false, wait: true });
    };
  } else if (system === "bullmq") {
    const connection = new Redis(process.env.REDIS_URL!, { maxRetriesPerRequest: null });
    const worker = new Worker(queue, async (job) => call(job.data as PeerPayload), { connection, prefix: process.env.BENCH_REDIS_PREFIX, concurrency });
    await worker.waitUntilReady();
    stop = async () => {
      await worker.close(true);
      await connection.quit();
    };
  } else if (system === "http-client") {
    const jobs = Number(process.env.BENCH_JOBS ?? 0);
    const url = process.env.BENCH_URL ?? "";
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < jobs; i = next++) await call({ url, key: `http-client-${i}` });
    };
    // Nothing else holds the event loop open until the signal comes (no store connection, as the peers have).
    const idle = setInterval(() => {}, 60_000);
    process.once("SIGUSR2", () => {
      void Promise.all(Array.from({ length: concurrency }, lane)).catch((err: unknown) => process.stderr.write(`${String(err)}\n`));
    });
    stop = async () => {
      clearInterval(idle);
      await agent.close();
    };
  } else {
    throw new Error(`BENCH_SYSTEM must be graphile-worker, pg-boss, bullmq or http-client (got "${system}")`);
  }
  process.stdout.write("ready\n");
  process.once("SIGTERM", () => {
    void stop().finally(() => process.exit(0));
  });
}

void main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
