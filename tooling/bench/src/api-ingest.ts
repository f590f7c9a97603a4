import { randomUUID } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generateApiKey, shardForTenant, sql } from "@tick/db";
import { createTestDatabase, newTestJob, testServerUrl } from "@tick/db/testing";
import { freePort, startProcess, testRedisUrl, type RunningProcess } from "@tick/testing";
import { Redis } from "ioredis";
import pg from "pg";
import { Pool } from "undici";
import { round } from "./cost.js";
import { percentile, type Context } from "./scenarios.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const nextBin = path.join(root, "node_modules/next/dist/bin/next");
/** The console's warning when the admission check let a request through unchecked (admission.ts). */
const FAIL_OPEN_LINE = "failing open";

interface IngestRun {
  endpoint: "single" | "batch";
  /** Closed loop: this many requests in flight, each sent when the previous one of its lane answered. */
  concurrency: number | null;
  /** Open loop: requests sent at this pace whatever the answers (latency counted from the planned send). */
  ratePerSecond: number | null;
  batchSize: number;
  requests: number;
  /** Jobs the API answered 201 for. */
  accepted: number;
  seconds: number;
  jobsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests (or batch items) not answered 201. */
  errors: number;
  /** Answers without RateLimit headers: the admission check did not run (Redis did not answer in time). */
  failOpens: number;
}

export interface ApiIngestResult {
  bareInsert: { jobs: number; seconds: number; jobsPerSecond: number };
  runs: IngestRun[];
  failOpens: number;
  /** "failing open" lines in the console's log (it logs at most one per 10 s, so a lower bound). */
  failOpenLogLines: number;
}

interface Console {
  url: string;
  databaseUrl: string;
  redisPrefix: string;
  proc: RunningProcess;
  apiKey: string;
  tenant: { id: string; shard: number; queueId: string };
  pool: pg.Pool;
  close(): Promise<void>;
}

/** The built console (`next start`) on a fresh database and Redis prefix, with one tenant no limit throttles. */
export async function startConsole(): Promise<Console> {
  const db = await createTestDatabase(testServerUrl());
  const prefix = `tick-bench-api:${randomUUID().slice(0, 8)}`;
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const id = randomUUID();
  const shard = shardForTenant(id, 16);
  const queueId = randomUUID();
  await pool.query(
    `INSERT INTO tenants (id, slug, name, shard, admission_rate, admission_burst, max_pending_jobs, max_in_flight, updated_at)
     VALUES ($1, $2, $2, $3, 1000000, 1000000, 100000000, 1000, now())`,
    [id, `bench-${id.slice(0, 8)}`, shard],
  );
  await pool.query(`INSERT INTO queues (id, tenant_id, name, updated_at) VALUES ($1, $2, 'default', now())`, [queueId, id]);
  const key = generateApiKey();
  await pool.query(`INSERT INTO api_keys (id, tenant_id, name, prefix, hash, scopes) VALUES ($1, $2, 'bench', $3, $4, ARRAY['admin'])`, [randomUUID(), id, key.prefix, key.hash]);
  const port = await freePort();
  const metricsPort = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // BENCH_CPU_PROF: the console is profiled like Tick's other processes.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const proc = startProcess(process.execPath, [...profile, nextBin, "start", path.join(root, "apps/console"), "-p", String(port), "-H", "127.0.0.1"], {
    env: {
      ...(process.env as Record<string, string>),
      NODE_ENV: "production",
      NEXT_TELEMETRY_DISABLED: "1",
      DATABASE_URL: db.url,
      REDIS_URL: testRedisUrl(),
      TICK_REDIS_PREFIX: prefix,
      TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8",
      NEXTAUTH_SECRET: "bench-secret-bench-secret-bench-0123456",
      NEXTAUTH_URL: url,
      CONSOLE_METRICS_PORT: String(metricsPort),
      LOG_LEVEL: "warn",
    },
  });
  const close = async () => {
    await proc.stop(10_000);
    await pool.end();
    const redis = new Redis(testRedisUrl());
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await db.drop();
  };
  const deadline = Date.now() + 90_000;
  while (!(await fetch(`${url}/readyz`).catch(() => null))?.ok) {
    if (proc.child.exitCode !== null || Date.now() > deadline) {
      await close();
      throw new Error(`console not ready: ${proc.output().slice(-800)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { url, databaseUrl: db.url, redisPrefix: prefix, proc, apiKey: key.key, tenant: { id, shard, queueId }, pool, close };
}

/** Single creates closed-loop at these many in flight; the last is the throughput the targets judge. */
export const SINGLE_CONCURRENCY = [1, 8, 64] as const;
/** Single creates open-loop at this pace: the latency the targets judge. */
export const PACED_RATE = 500;
/** Alternating slices of the batch-against-bare-insert comparison. */
const BATCH_SLICES = 4;

interface Answer {
  ms: number;
  accepted: number;
  errors: number;
  failOpen: boolean;
}

/**
 * API ingest: POST /api/v1/jobs (one job, an Idempotency-Key each) closed-loop at 1, 8 and 64 in flight
 * and open-loop at 500 requests/s, POST /api/v1/jobs/batch (1,000 jobs, a key each) at a few levels, and
 * the same rows inserted by `sql.insertJobs` straight into the same database, 1,000 per statement.
 */
export async function apiIngest(ctx: Context, sizes: { singleRequests: number; pacedSeconds: number; batches: number }): Promise<ApiIngestResult> {
  const tick = await startConsole();
  const http = new Pool(tick.url, { connections: 64, pipelining: 1 });
  let seq = 0;
  const job = () => ({ target: { method: "POST", url: ctx.sink.url, body: "{}" }, delayMs: 3_600_000 });
  const headers = { authorization: `Bearer ${tick.apiKey}`, "content-type": "application/json" };
  const failedOpen = (h: Record<string, string | string[] | undefined>) => h["ratelimit-limit"] === undefined;

  const single = async (): Promise<Answer> => {
    const t0 = performance.now();
    const res = await http.request({ path: "/api/v1/jobs", method: "POST", headers: { ...headers, "idempotency-key": `s-${seq++}` }, body: JSON.stringify(job()) });
    await res.body.text();
    const ok = res.statusCode === 201;
    return { ms: performance.now() - t0, accepted: ok ? 1 : 0, errors: ok ? 0 : 1, failOpen: res.statusCode < 300 && failedOpen(res.headers) };
  };
  const batch = (size: number) => async (): Promise<Answer> => {
    const jobs = Array.from({ length: size }, () => ({ ...job(), idempotencyKey: `b-${seq++}` }));
    const t0 = performance.now();
    const res = await http.request({ path: "/api/v1/jobs/batch", method: "POST", headers, body: JSON.stringify({ jobs }) });
    const text = await res.body.text();
    const ms = performance.now() - t0;
    if (res.statusCode !== 200) return { ms, accepted: 0, errors: size, failOpen: false };
    const accepted = (JSON.parse(text) as { results: { status: number }[] }).results.filter((r) => r.status === 201).length;
    return { ms, accepted, errors: size - accepted, failOpen: failedOpen(res.headers) };
  };
  const summarise = (run: Pick<IngestRun, "endpoint" | "concurrency" | "ratePerSecond" | "batchSize">, answers: Answer[], seconds: number): IngestRun => {
    const ms = answers.map((a) => a.ms);
    const accepted = answers.reduce((n, a) => n + a.accepted, 0);
    const r: IngestRun = {
      ...run,
      requests: answers.length,
      accepted,
      seconds: round(seconds),
      jobsPerSecond: Math.round(accepted / seconds),
      p50Ms: round(percentile(ms, 50) ?? 0, 1),
      p99Ms: round(percentile(ms, 99) ?? 0, 1),
      errors: answers.reduce((n, a) => n + a.errors, 0),
      failOpens: answers.filter((a) => a.failOpen).length,
    };
    ctx.log(`  ${run.endpoint} ${run.ratePerSecond ? `${run.ratePerSecond} req/s` : `×${run.concurrency}`}: ${r.jobsPerSecond} jobs/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ${r.errors} errors, ${r.failOpens} fail-opens`);
    return r;
  };
  const closedLoop = async (send: () => Promise<Answer>, concurrency: number, requests: number) => {
    const answers: Answer[] = [];
    let sent = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent++ < requests) answers.push(await send());
      }),
    );
    return { answers, seconds: (performance.now() - t0) / 1000 };
  };
  /** Sends at a fixed pace; each latency runs from the planned send time, so a stall is not hidden. */
  const openLoop = async (ratePerSecond: number, seconds: number) => {
    const n = ratePerSecond * seconds;
    const t0 = performance.now();
    const pending: Promise<Answer>[] = [];
    for (let i = 0; i < n; i++) {
      const planned = t0 + (i * 1000) / ratePerSecond;
      const wait = planned - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(single().then((a) => ({ ...a, ms: a.ms + Math.max(0, -wait) })));
    }
    const answers = await Promise.all(pending);
    return { answers, seconds: (performance.now() - t0) / 1000 };
  };

  try {
    const runs: IngestRun[] = [];
    ctx.log(`api ingest: console up at ${tick.url}; warming up`);
    await closedLoop(single, 4, 40);
    await closedLoop(batch(100), 1, 3);
    for (const c of SINGLE_CONCURRENCY) {
      ctx.log(`api ingest: POST /jobs, ${c} concurrent, ${sizes.singleRequests} requests`);
      const { answers, seconds } = await closedLoop(single, c, sizes.singleRequests);
      runs.push(summarise({ endpoint: "single", concurrency: c, ratePerSecond: null, batchSize: 1 }, answers, seconds));
    }
    ctx.log(`api ingest: POST /jobs at ${PACED_RATE} requests/s for ${sizes.pacedSeconds} s`);
    const paced = await openLoop(PACED_RATE, sizes.pacedSeconds);
    runs.push(summarise({ endpoint: "single", concurrency: null, ratePerSecond: PACED_RATE, batchSize: 1 }, paced.answers, paced.seconds));
    // Batches one at a time against the statement they end in, 1,000 rows with nothing in front (the bare insert),
    // measured in alternating slices: the machine's speed drifts by a fifth within a minute, and two runs one after
    // the other would divide one moment's speed by another's. Both add the same rows to the same tenant.
    const bare = async (jobs: number): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < jobs; i += 1_000) {
        const rows = Array.from({ length: 1_000 }, () =>
          newTestJob(tick.tenant.queueId, {
            delay_ms: 3_600_000,
            idempotency_key: `bare-${seq++}`,
            request_hash: randomUUID().replace(/-/g, ""),
            url: ctx.sink.url,
            body: "{}",
          }),
        );
        await sql.insertJobs(tick.pool, tick.tenant, rows, 24 * 3_600_000);
      }
      return (performance.now() - t0) / 1000;
    };
    const slices = Math.min(BATCH_SLICES, sizes.batches);
    ctx.log(`api ingest: POST /jobs/batch of 1,000, 1 concurrent, ${sizes.batches} batches, and bare sql.insertJobs of the same rows, in ${slices} alternating slices`);
    const batchAnswers: Answer[] = [];
    let batchSeconds = 0;
    let bareSeconds = 0;
    for (let s = 0; s < slices; s++) {
      const requests = Math.floor((sizes.batches * (s + 1)) / slices) - Math.floor((sizes.batches * s) / slices);
      const { answers, seconds } = await closedLoop(batch(1_000), 1, requests);
      batchAnswers.push(...answers);
      batchSeconds += seconds;
      bareSeconds += await bare(requests * 1_000);
    }
    runs.push(summarise({ endpoint: "batch", concurrency: 1, ratePerSecond: null, batchSize: 1_000 }, batchAnswers, batchSeconds));
    const jobs = sizes.batches * 1_000;
    const bareInsert = { jobs, seconds: round(bareSeconds), jobsPerSecond: Math.round(jobs / bareSeconds) };
    ctx.log(`  bare insert: ${bareInsert.jobsPerSecond} jobs/s`);
    ctx.log(`api ingest: POST /jobs/batch of 1,000, 4 concurrent, ${sizes.batches} batches`);
    const four = await closedLoop(batch(1_000), 4, sizes.batches);
    runs.push(summarise({ endpoint: "batch", concurrency: 4, ratePerSecond: null, batchSize: 1_000 }, four.answers, four.seconds));
    // The console writes its log lines asynchronously: let the last ones reach the pipe.
    await new Promise((r) => setTimeout(r, 500));
    const failOpenLogLines = tick.proc.output().split(FAIL_OPEN_LINE).length - 1;
    return { bareInsert, runs, failOpens: runs.reduce((n, r) => n + r.failOpens, 0), failOpenLogLines };
  } finally {
    await http.close();
    await tick.close();
  }
}
