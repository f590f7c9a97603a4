// Flow keys in the benchmark (docs/benchmarks.md, "Flow keys"): fairness between one tenant's keys, how exactly
// a per-key cap and a per-key rate hold at the target, debounce through the API, and the claim's latency with
// 100,000 keys of due work. Each scenario runs the real scheduler and worker processes against its own sink,
// which knows each request's flow key and when it arrived and ended.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { childTraceContext, formatTraceparent } from "@tick/core";
import { createPool, sql } from "@tick/db";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl } from "@tick/db/testing";
import { round } from "./cost.js";
import { startConsole } from "./api-ingest.js";
import { percentile, until, withTick, type Context } from "./scenarios.js";
import { liveJobs, type TickCluster, type TickTenant } from "./tick.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface KeyedCall {
  key: string;
  seq: number;
  start: number;
  end: number;
}

/**
 * A target that reads `{"key": ..., "seq": ...}` from each request body, answers after `delayMs`, and keeps every
 * call's key, sequence number and arrival and end (Date.now()), and the most requests of one key at once.
 */
async function startKeyedSink(delayMs: number) {
  const calls: KeyedCall[] = [];
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const start = Date.now();
      let key = "";
      let seq = -1;
      try {
        const parsed = JSON.parse(body) as { key?: string; seq?: number };
        key = parsed.key ?? "";
        seq = parsed.seq ?? -1;
      } catch {
        key = "";
      }
      const now = (open.get(key) ?? 0) + 1;
      open.set(key, now);
      maxOpen.set(key, Math.max(maxOpen.get(key) ?? 0, now));
      setTimeout(() => {
        open.set(key, (open.get(key) ?? 1) - 1);
        calls.push({ key, seq, start, end: Date.now() });
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      }, delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keyed`,
    calls,
    maxOpen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** `count` jobs of one flow key (null: none), due now, each body `{"key", "seq"}` for the sink. */
async function insertKeyedJobs(cluster: TickCluster, tenant: TickTenant, url: string, key: string | null, count: number, label = key ?? "plain"): Promise<void> {
  for (let i = 0; i < count; i += 1_000) {
    const chunk = Array.from({ length: Math.min(1_000, count - i) }, (_, j) =>
      newTestJob(tenant.queueId, {
        url,
        body: JSON.stringify({ key: label, seq: i + j }),
        timeout_ms: 10_000,
        flow_key: key,
        traceparent: formatTraceparent(childTraceContext(null)),
      }),
    );
    await sql.insertJobs(cluster.pool, tenant, chunk, 24 * 3_600_000);
  }
  await cluster.noteDue(tenant);
}

/** Start − due of every first attempt of the tenant's jobs of these keys, in ms. */
async function keyLags(cluster: TickCluster, tenantId: string, keys: readonly string[]): Promise<number[]> {
  const { rows } = await cluster.pool.query<{ lag: number }>(
    `SELECT extract(epoch FROM a.started_at - j.due_at) * 1000 AS lag
       FROM history.jobs_all j JOIN history.attempts_all a ON a.job_id = j.id AND a.number = 1
      WHERE j.tenant_id = $1 AND j.flow_key = ANY($2::text[]) AND a.started_at IS NOT NULL`,
    [tenantId, keys],
  );
  return rows.map((r) => Number(r.lag));
}

// ---------------------------------------------------------------------------------------------
// Key fairness: one tenant, one queue; one key's burst and quiet keys sending one job a second each.

export interface KeyFairnessResult {
  burstJobs: number;
  quietKeys: number;
  quietSoloP99Ms: number;
  quietUnderBurstP99Ms: number;
  quietRatio: number;
}

export async function keyFairness(ctx: Context, burst: number, quietKeys: number, seconds: number): Promise<KeyFairnessResult> {
  return withTick(async (cluster) => {
    await cluster.startScheduler();
    await cluster.startWorker();
    const sink = await startKeyedSink(0);
    try {
      const keys = Array.from({ length: quietKeys }, (_, i) => `quiet-${String(i).padStart(4, "0")}`);
      // Every quiet key sends one job a second, spread over the second.
      const trickle = async (tenant: TickTenant, whileRunning: () => boolean) => {
        for (let second = 0; whileRunning(); second++) {
          const started = Date.now();
          for (let i = 0; i < keys.length && whileRunning(); i++) {
            await insertKeyedJobs(cluster, tenant, sink.url, keys[i]!, 1);
            await sleep(Math.max(0, started + ((i + 1) * 1_000) / keys.length - Date.now()));
          }
        }
      };
      ctx.log(`key fairness: ${quietKeys} quiet keys at 1 job/s each, alone for ${seconds} s`);
      const solo = await cluster.createTenant({ maxInFlight: 10_000 });
      const soloEnd = Date.now() + seconds * 1_000;
      await trickle(solo, () => Date.now() < soloEnd);
      await until(ctx, "quiet keys alone", async () => ({ ok: (await liveJobs(cluster.pool, solo.id)) === 0, progress: "" }), 60_000);
      const soloP99 = percentile(await keyLags(cluster, solo.id, keys), 99)!;

      ctx.log(`key fairness: the same quiet keys beside one key's ${burst}-job burst, in the same tenant and queue`);
      const tenant = await cluster.createTenant({ maxInFlight: 10_000 });
      await insertKeyedJobs(cluster, tenant, sink.url, "burst", burst);
      let bursting = true;
      const quietRun = trickle(tenant, () => bursting);
      await until(ctx, "burst", async () => {
        const left = Number((await cluster.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE tenant_id = $1 AND flow_key = 'burst' AND status <> 'succeeded'`, [tenant.id])).rows[0]!.n);
        return { ok: left === 0, progress: `burst key: ${left} left` };
      }, 900_000);
      bursting = false;
      await quietRun;
      await until(ctx, "the rest", async () => ({ ok: (await liveJobs(cluster.pool, tenant.id)) === 0, progress: "" }), 120_000);
      const underP99 = percentile(await keyLags(cluster, tenant.id, keys), 99)!;
      const result: KeyFairnessResult = {
        burstJobs: burst,
        quietKeys,
        quietSoloP99Ms: round(soloP99, 1),
        quietUnderBurstP99Ms: round(underP99, 1),
        quietRatio: round(underP99 / soloP99, 3),
      };
      ctx.log(`  quiet keys' p99 start − due: ${result.quietSoloP99Ms} ms alone, ${result.quietUnderBurstP99Ms} ms beside the burst (×${result.quietRatio})`);
      return result;
    } finally {
      await sink.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Cap accuracy: keys with perKeyConcurrency 2 and 200 ms calls; the most calls of one key at once at the sink,
// and the throughput against the same jobs without keys.

export interface CapAccuracyResult {
  keys: number;
  jobs: number;
  cap: number;
  /** The most requests of one key the sink had open at once, over all keys. */
  maxConcurrentPerKey: number;
  keyedJobsPerSecond: number;
  plainJobsPerSecond: number;
  throughputRatio: number;
}

export async function capAccuracy(ctx: Context, keys: number, jobsPerKey: number): Promise<CapAccuracyResult> {
  const cap = 2;
  const run = async (keyed: boolean) =>
    withTick(async (cluster) => {
      // Enough worker slots that the cap, not the worker, limits: every key at its cap at once.
      await cluster.startScheduler();
      await cluster.startWorker({ WORKER_CONCURRENCY: String(Math.min(2_000, keys * cap)) });
      const sink = await startKeyedSink(200);
      try {
        const tenant = await cluster.createTenant({ maxInFlight: 100_000 });
        if (keyed) await cluster.pool.query(`UPDATE queues SET per_key_concurrency = $2 WHERE id = $1`, [tenant.queueId, cap]);
        // Jobs go in key by key, each key's all together; with keys the sink still sees each key's calls by `key`.
        for (let k = 0; k < keys; k++) {
          const key = `k${String(k).padStart(5, "0")}`;
          await insertKeyedJobs(cluster, tenant, sink.url, keyed ? key : null, jobsPerKey, key);
        }
        const total = keys * jobsPerKey;
        const started = Date.now();
        await until(ctx, keyed ? "capped keys" : "the same jobs without keys", async () => ({ ok: sink.calls.length >= total, progress: `${sink.calls.length} of ${total}` }), 900_000);
        const firstStart = Math.min(...sink.calls.map((c) => c.start));
        const lastEnd = Math.max(...sink.calls.map((c) => c.end));
        return { maxOpen: Math.max(...sink.maxOpen.values()), jobsPerSecond: round(total / ((lastEnd - Math.min(firstStart, started)) / 1_000), 0) };
      } finally {
        await sink.close();
      }
    });
  ctx.log(`cap accuracy: ${keys} keys × ${jobsPerKey} jobs of 200 ms, perKeyConcurrency ${cap}`);
  const keyed = await run(true);
  ctx.log(`  with keys: at most ${keyed.maxOpen} of one key at once; ${keyed.jobsPerSecond} jobs/s`);
  const plain = await run(false);
  ctx.log(`  without keys: ${plain.jobsPerSecond} jobs/s`);
  return {
    keys,
    jobs: keys * jobsPerKey,
    cap,
    maxConcurrentPerKey: keyed.maxOpen,
    keyedJobsPerSecond: keyed.jobsPerSecond,
    plainJobsPerSecond: plain.jobsPerSecond,
    throughputRatio: round(keyed.jobsPerSecond / plain.jobsPerSecond, 3),
  };
}

// ---------------------------------------------------------------------------------------------
// Rate accuracy: keys at perKeyRate 5 per second with a backlog each, two schedulers; calls per key per whole
// second at the sink, after the first.

export interface RateAccuracyResult {
  keys: number;
  seconds: number;
  ratePerSecond: number;
  /** The largest |calls in a second − rate| over every key and every whole second after the first. */
  maxDeviation: number;
  /** Key-seconds judged, and how many were off by more than 1. */
  keySeconds: number;
  keySecondsOff: number;
}

export async function rateAccuracy(ctx: Context, keys: number, seconds: number): Promise<RateAccuracyResult> {
  const rate = 5;
  return withTick(async (cluster) => {
    await cluster.startScheduler();
    await cluster.startScheduler();
    await cluster.startWorker({ WORKER_CONCURRENCY: "500" });
    const sink = await startKeyedSink(0);
    try {
      const tenant = await cluster.createTenant({ maxInFlight: 100_000 });
      await cluster.pool.query(`UPDATE queues SET per_key_rate_limit = $2, per_key_rate_period_ms = 1000 WHERE id = $1`, [tenant.queueId, rate]);
      ctx.log(`rate accuracy: ${keys} keys at ${rate}/s for ${seconds} s, two schedulers`);
      // A backlog larger than the run can take: every key is over its rate the whole time.
      for (let k = 0; k < keys; k++) await insertKeyedJobs(cluster, tenant, sink.url, `r${String(k).padStart(4, "0")}`, rate * (seconds + 5));
      const start = Date.now();
      await sleep(seconds * 1_000);
      const end = start + seconds * 1_000;
      const byKey = new Map<string, number[]>();
      for (const c of sink.calls) if (c.start < end) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c.start]);
      const firstCall = Math.min(...sink.calls.map((c) => c.start));
      let maxDeviation = 0;
      let keySeconds = 0;
      let keySecondsOff = 0;
      for (const times of byKey.values()) {
        // Whole seconds after the first (the first holds the bucket's burst), up to the end of the run.
        for (let s = firstCall + 1_000; s + 1_000 <= end; s += 1_000) {
          const n = times.filter((t) => t >= s && t < s + 1_000).length;
          keySeconds++;
          maxDeviation = Math.max(maxDeviation, Math.abs(n - rate));
          if (Math.abs(n - rate) > 1) keySecondsOff++;
        }
      }
      ctx.log(`  ${keySeconds} key-seconds: largest deviation ${maxDeviation}, ${keySecondsOff} off by more than 1`);
      return { keys, seconds, ratePerSecond: rate, maxDeviation, keySeconds, keySecondsOff };
    } finally {
      await sink.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Debounce: trailing-debounce creates through the API over many keys, then one run per key with its last payload.

export interface DebounceResult {
  creates: number;
  keys: number;
  createSeconds: number;
  createsPerSecond: number;
  runs: number;
  keysRunOnce: number;
  keysWithLastPayload: number;
}

export async function debounce(ctx: Context, creates: number, keys: number): Promise<DebounceResult> {
  const consoleApp = await startConsole();
  const sink = await startKeyedSink(0);
  try {
    return await withTick(
      async (cluster) => {
        await cluster.startScheduler();
        await cluster.startWorker();
        ctx.log(`debounce: ${creates} trailing creates over ${keys} keys through POST /jobs/batch (period 2 s)`);
        const perBatch = 1_000;
        const started = Date.now();
        const last = new Map<string, number>();
        for (let b = 0; b * perBatch < creates; b++) {
          const jobs = Array.from({ length: Math.min(perBatch, creates - b * perBatch) }, (_, i) => {
            const seq = b * perBatch + i;
            const key = `d${String(seq % keys).padStart(4, "0")}`;
            last.set(key, seq);
            return { target: { url: sink.url, body: JSON.stringify({ key, seq }) }, debounce: { key, periodMs: 2_000 } };
          });
          const res = await fetch(`${consoleApp.url}/api/v1/jobs/batch`, {
            method: "POST",
            headers: { authorization: `Bearer ${consoleApp.apiKey}`, "content-type": "application/json" },
            body: JSON.stringify({ jobs }),
          });
          if (!res.ok) throw new Error(`batch ${b}: ${res.status} ${await res.text()}`);
        }
        const createSeconds = (Date.now() - started) / 1_000;
        await until(ctx, "debounced runs", async () => ({ ok: (await liveJobs(consoleApp.pool, consoleApp.tenant.id)) === 0, progress: `${sink.calls.length} runs` }), 300_000);
        const runsPerKey = new Map<string, KeyedCall[]>();
        for (const c of sink.calls) runsPerKey.set(c.key, [...(runsPerKey.get(c.key) ?? []), c]);
        const result: DebounceResult = {
          creates,
          keys,
          createSeconds: round(createSeconds, 2),
          createsPerSecond: round(creates / createSeconds, 0),
          runs: sink.calls.length,
          keysRunOnce: [...runsPerKey.values()].filter((r) => r.length === 1).length,
          keysWithLastPayload: [...runsPerKey.entries()].filter(([k, r]) => r.length === 1 && r[0]!.seq === last.get(k)).length,
        };
        ctx.log(`  ${result.createsPerSecond} creates/s; ${result.runs} runs, ${result.keysRunOnce} keys ran once, ${result.keysWithLastPayload} with their last payload`);
        return result;
      },
      {},
      { databaseUrl: consoleApp.databaseUrl, redisPrefix: consoleApp.redisPrefix },
    );
  } finally {
    await sink.close();
    await consoleApp.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Claim latency: a claim of 100 with 100,000 keys over 1,000,000 due jobs, against 10,000 due jobs without keys.

export interface KeyClaimResult {
  plainJobs: number;
  plainP50Ms: number;
  keyedKeys: number;
  keyedJobs: number;
  keyedP50Ms: number;
  ratio: number;
}

async function probeClaims(pool: ReturnType<typeof createPool>, tenant: { id: string; shard: number }, keyed: boolean, n: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      const started = performance.now();
      await sql.claimDueJobs(client, { shard: tenant.shard, epoch: "1", tenantId: tenant.id, limit: 100, keyed, rated: false, keyCursors: {} });
      times.push(performance.now() - started);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }
  return percentile(times.slice(5), 50)!;
}

export async function keyClaimLatency(ctx: Context, keys: number, jobs: number): Promise<KeyClaimResult> {
  const db = await createTestDatabase(testServerUrl());
  const pool = createPool(db.url, { max: 2 });
  try {
    const plain = await createTestTenant(pool, { shardCount: 16, weight: 1, maxInFlight: 1_000_000 });
    await pool.query(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, now() - interval '1 minute', 'http://127.0.0.1:9/never', now() FROM generate_series(1, 10000)`,
      [plain.id, plain.queueId, plain.shard],
    );
    const keyed = await createTestTenant(pool, { shardCount: 16, weight: 1, maxInFlight: 1_000_000 });
    ctx.log(`key claim: ${jobs.toLocaleString("en")} due jobs over ${keys.toLocaleString("en")} keys`);
    for (let i = 0; i < jobs; i += 100_000) {
      await pool.query(
        `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, flow_key, updated_at)
         SELECT gen_random_uuid(), $1, $2, $3, now() - interval '1 minute', 'http://127.0.0.1:9/never', 'k' || lpad((g % $5)::text, 6, '0'), now()
           FROM generate_series($4::int, $4::int + least(99999, $6::int - $4::int - 1)) g`,
        [keyed.id, keyed.queueId, keyed.shard, i, keys, jobs],
      );
      ctx.log(`  ${Math.min(jobs, i + 100_000).toLocaleString("en")} inserted`);
    }
    await pool.query("VACUUM ANALYZE jobs");
    const plainP50 = await probeClaims(pool, plain, false, 40);
    const keyedP50 = await probeClaims(pool, keyed, true, 40);
    const result = { plainJobs: 10_000, plainP50Ms: round(plainP50, 2), keyedKeys: keys, keyedJobs: jobs, keyedP50Ms: round(keyedP50, 2), ratio: round(keyedP50 / plainP50, 3) };
    ctx.log(`  claim of 100: p50 ${result.plainP50Ms} ms (10,000 jobs, no keys), ${result.keyedP50Ms} ms (keys) ×${result.ratio}`);
    return result;
  } finally {
    await pool.end();
    await db.drop();
  }
}
