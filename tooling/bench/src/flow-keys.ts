// Flow keys in the benchmark (docs/benchmarks.md, "Flow keys"): fairness between one tenant's keys, how exactly
// a per-key cap and a per-key rate hold at the target, debounce through the API, and the claim's latency with
// 100,000 keys of due work. Each scenario but the claim's runs the real scheduler and worker processes against a
// sink of its own, which knows each request's key, sequence number and job, and when it arrived and ended.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { childTraceContext, formatTraceparent } from "@tick/core";
import { createPool, sql } from "@tick/db";
import { createTestDatabase, createTestTenant, newTestJob, testServerUrl } from "@tick/db/testing";
import type pg from "pg";
import { Pool } from "undici";
import { round } from "./cost.js";
import { startConsole } from "./api-ingest.js";
import { checkDebounce, checkRate, maxOpenByKey, slotRefillGaps, type DebounceCreate, type RateCheck } from "./flow-key-checks.js";
import { databaseNow, percentile, until, withTick, type Context } from "./scenarios.js";
import { liveJobs, type TickCluster, type TickTenant } from "./tick.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Milliseconds since the epoch with the monotonic clock's fraction: the sink's clock. */
const sinkNow = () => performance.timeOrigin + performance.now();

interface KeyedCall {
  key: string;
  seq: number;
  /** The Tick-Job-Id header the worker sends. */
  jobId: string;
  start: number;
  end: number;
}

/**
 * A target that reads `{"key": ..., "seq": ...}` from each request body and the job from its Tick-Job-Id header,
 * answers after `delayMs`, and keeps every call with its arrival and its answer (sinkNow).
 */
async function startKeyedSink(delayMs: number) {
  const calls: KeyedCall[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const start = sinkNow();
      let key = "";
      let seq = -1;
      try {
        const parsed = JSON.parse(body) as { key?: string; seq?: number };
        key = parsed.key ?? "";
        seq = parsed.seq ?? -1;
      } catch {
        key = "";
      }
      const header = req.headers["tick-job-id"];
      const jobId = typeof header === "string" ? header : "";
      const answer = () => {
        calls.push({ key, seq, jobId, start, end: sinkNow() });
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keyed`,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Jobs for the keyed sink, 1,000 rows a statement: each `{ key, seq }` is one job of flow key `key` (null when
 * `keyed` is false: the same jobs without keys, the sink still told the key in the body), due at `runAt` (or now).
 * The due index is told once at the end.
 */
async function insertKeyedJobs(cluster: TickCluster, tenant: TickTenant, url: string, jobs: readonly { key: string; seq: number }[], options: { keyed?: boolean; runAt?: Date } = {}): Promise<void> {
  for (let i = 0; i < jobs.length; i += 1_000) {
    const chunk = jobs.slice(i, i + 1_000).map((j) =>
      newTestJob(tenant.queueId, {
        url,
        body: JSON.stringify(j),
        timeout_ms: 10_000,
        run_at: options.runAt?.toISOString() ?? null,
        flow_key: options.keyed === false ? null : j.key,
        traceparent: formatTraceparent(childTraceContext(null)),
      }),
    );
    await sql.insertJobs(cluster.pool, tenant, chunk, 24 * 3_600_000);
  }
  await cluster.noteDue(tenant, options.runAt?.getTime());
}

/** Waits until every shard is held, by each of the cluster's schedulers, none more than one above another. */
async function leasesSettled(ctx: Context, cluster: TickCluster, schedulers: number): Promise<Record<string, number>> {
  const spread = async () =>
    (await cluster.pool.query<{ holder: string; n: number }>(`SELECT holder, count(*)::int AS n FROM shard_leases WHERE holder IS NOT NULL AND expires_at > now() GROUP BY holder ORDER BY holder`)).rows;
  await until(ctx, "shard leases settling", async () => {
    const rows = await spread();
    const counts = rows.map((r) => r.n);
    const ok = rows.length === schedulers && counts.reduce((a, b) => a + b, 0) === cluster.shards && Math.max(...counts) - Math.min(...counts) <= 1;
    return { ok, progress: rows.map((r) => `${r.holder} ${r.n}`).join(", ") || "none held" };
  }, 120_000);
  return Object.fromEntries((await spread()).map((r) => [r.holder, r.n]));
}

// ---------------------------------------------------------------------------------------------
// Key fairness: one tenant, one queue; one key's burst and quiet keys sending one job a second each.

export interface KeyFairnessResult {
  burstJobs: number;
  quietKeys: number;
  /** Quiet jobs measured alone and beside the burst. */
  quietJobs: { solo: number; underBurst: number };
  quietSoloP99Ms: number;
  quietUnderBurstP99Ms: number;
  quietRatio: number;
  /** The p99 of each part of the quiet keys' lag (due → claimed, claimed → started), alone and beside the burst. */
  quietSplit: { solo: { claimP99Ms: number; startP99Ms: number }; underBurst: { claimP99Ms: number; startP99Ms: number } };
  /** How long the burst key took to drain (its jobs per second). */
  burstSeconds: number;
}

/**
 * Start − due of the first attempts of the tenant's jobs of these keys (ms, database clock), and the same lag
 * split at the claim, as the fairness scenario reads a tenant's.
 */
async function keyLags(pool: pg.Pool, tenantId: string, keys: readonly string[]): Promise<{ lag: number[]; claim: number[]; start: number[] }> {
  const { rows } = await pool.query<{ lag: number; claim: number; start: number }>(
    `SELECT extract(epoch FROM a.started_at - j.due_at) * 1000 AS lag, extract(epoch FROM a.claimed_at - j.due_at) * 1000 AS claim,
            extract(epoch FROM a.started_at - a.claimed_at) * 1000 AS start
       FROM history.jobs_all j JOIN history.attempts_all a ON a.job_id = j.id AND a.number = 1
      WHERE j.tenant_id = $1 AND j.flow_key = ANY($2::text[]) AND a.started_at IS NOT NULL`,
    [tenantId, keys],
  );
  return { lag: rows.map((r) => Number(r.lag)), claim: rows.map((r) => Number(r.claim)), start: rows.map((r) => Number(r.start)) };
}

const splitP99 = (lags: { claim: number[]; start: number[] }) => ({ claimP99Ms: round(percentile(lags.claim, 99) ?? 0, 1), startP99Ms: round(percentile(lags.start, 99) ?? 0, 1) });

export async function keyFairness(ctx: Context, burst: number, quietKeys: number, seconds: number): Promise<KeyFairnessResult> {
  return withTick(async (cluster) => {
    await cluster.startScheduler();
    await cluster.startWorker();
    const sink = await startKeyedSink(0);
    // As in the fairness scenario, both tenants on shard 0 (alone and beside the burst are read on one shard).
    const shard = 0;
    try {
      const keys = Array.from({ length: quietKeys }, (_, i) => `quiet-${String(i).padStart(4, "0")}`);
      // Every quiet key creates one job a second, the keys spread over the second; seq counts the key's jobs.
      const trickle = async (tenant: TickTenant, whileRunning: () => boolean) => {
        for (let second = 0; whileRunning(); second++) {
          const started = Date.now();
          for (let i = 0; i < keys.length && whileRunning(); i++) {
            await insertKeyedJobs(cluster, tenant, sink.url, [{ key: keys[i]!, seq: second }]);
            await sleep(Math.max(0, started + ((i + 1) * 1_000) / keys.length - Date.now()));
          }
        }
      };
      ctx.log(`key fairness: ${quietKeys} quiet keys at 1 job/s each, alone for ${seconds} s`);
      const solo = await cluster.createTenant({ shard, maxInFlight: 10_000 });
      const soloEnd = Date.now() + seconds * 1_000;
      await trickle(solo, () => Date.now() < soloEnd);
      await until(ctx, "quiet keys alone", async () => ({ ok: (await liveJobs(cluster.pool, solo.id)) === 0, progress: "" }), 60_000);
      const soloLags = await keyLags(cluster.pool, solo.id, keys);
      const soloP99 = percentile(soloLags.lag, 99)!;

      ctx.log(`key fairness: the same quiet keys beside one key's ${burst}-job burst, in one tenant and queue`);
      const tenant = await cluster.createTenant({ shard, maxInFlight: 10_000 });
      const burstStarted = Date.now();
      await insertKeyedJobs(cluster, tenant, sink.url, Array.from({ length: burst }, (_, seq) => ({ key: "burst", seq })));
      let bursting = true;
      const quietRun = trickle(tenant, () => bursting);
      await until(ctx, "burst", async () => {
        const left = Number(
          (await cluster.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE tenant_id = $1 AND flow_key = 'burst' AND status IN ('scheduled', 'dispatched', 'running')`, [tenant.id])).rows[0]!.n,
        );
        return { ok: left === 0, progress: `burst key: ${left} left` };
        // Counting the burst's live jobs reads up to 50,000 rows: every 250 ms, so the watch does not take a core
        // from the run it watches (the drain time is good to a quarter of a second).
      }, 900_000, 250);
      const burstSeconds = round((Date.now() - burstStarted) / 1_000, 1);
      bursting = false;
      await quietRun;
      await until(ctx, "the rest", async () => ({ ok: (await liveJobs(cluster.pool, tenant.id)) === 0, progress: "" }), 120_000);
      const underLags = await keyLags(cluster.pool, tenant.id, keys);
      const underP99 = percentile(underLags.lag, 99)!;
      const result: KeyFairnessResult = {
        burstJobs: burst,
        quietKeys,
        quietJobs: { solo: soloLags.lag.length, underBurst: underLags.lag.length },
        quietSoloP99Ms: round(soloP99, 1),
        quietUnderBurstP99Ms: round(underP99, 1),
        // Three decimals: judged against 1.5 as measured.
        quietRatio: round(underP99 / soloP99, 3),
        quietSplit: { solo: splitP99(soloLags), underBurst: splitP99(underLags) },
        burstSeconds,
      };
      const { solo: a, underBurst: b } = result.quietSplit;
      ctx.log(`  quiet keys' p99 start − due: ${result.quietSoloP99Ms} ms alone (${soloLags.lag.length} jobs), ${result.quietUnderBurstP99Ms} ms beside the burst (${underLags.lag.length} jobs, burst drained in ${burstSeconds} s): ×${result.quietRatio}`);
      ctx.log(`  quiet p99 due → claimed ${a.claimP99Ms} / ${b.claimP99Ms} ms, claimed → started ${a.startP99Ms} / ${b.startP99Ms} ms (alone / beside the burst)`);
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
  callMs: number;
  /** The most requests of one key the sink had open at once, over all keys. */
  maxConcurrentPerKey: number;
  /** Keys that had more than `cap` calls open at once at some moment (must be 0). */
  keysOverCap: number;
  /** Keys that reached `cap` calls at once (the cap is used, not only respected). */
  keysAtCap: number;
  keyedJobsPerSecond: number;
  plainJobsPerSecond: number;
  throughputRatio: number;
  /** With keys: the mean calls open at the sink, against keys × cap. */
  keyedMeanOpen: number;
  /** With keys: how long a key's freed slot stayed empty before its next call (slotRefillGaps), p50 and p99. */
  slotRefillP50Ms: number;
  slotRefillP99Ms: number;
}

export async function capAccuracy(ctx: Context, keys: number, jobsPerKey: number): Promise<CapAccuracyResult> {
  const cap = 2;
  const callMs = 200;
  const slots = Math.min(2_000, keys * cap);
  const jobs = Array.from({ length: keys * jobsPerKey }, (_, i) => ({ key: `k${String(i % keys).padStart(5, "0")}`, seq: Math.floor(i / keys) }));
  const run = async (keyed: boolean) =>
    withTick(
      async (cluster) => {
        const sink = await startKeyedSink(callMs);
        try {
          const tenant = await cluster.createTenant({ maxInFlight: 100_000 });
          if (keyed) await cluster.pool.query(`UPDATE queues SET per_key_concurrency = $2 WHERE id = $1`, [tenant.queueId, cap]);
          // Every job is in and due before the processes start, so the rate is the delivery's, not the insert's.
          await insertKeyedJobs(cluster, tenant, sink.url, jobs, { keyed });
          // Worker slots for every key at its cap at once: the cap, not the worker, is what limits a key.
          await cluster.startWorker({ WORKER_CONCURRENCY: String(slots) });
          await cluster.startScheduler();
          await until(ctx, keyed ? "capped keys" : "the same jobs without keys", async () => ({ ok: sink.calls.length >= jobs.length, progress: `${sink.calls.length} of ${jobs.length}` }), 900_000);
          const firstStart = Math.min(...sink.calls.map((c) => c.start));
          const lastEnd = Math.max(...sink.calls.map((c) => c.end));
          const busy = sink.calls.reduce((a, c) => a + (c.end - c.start), 0);
          const gaps = slotRefillGaps(sink.calls, cap);
          return {
            open: maxOpenByKey(sink.calls),
            jobsPerSecond: Math.round(jobs.length / ((lastEnd - firstStart) / 1_000)),
            meanOpen: round(busy / (lastEnd - firstStart), 1),
            refill: { p50: round(percentile(gaps, 50) ?? 0, 1), p99: round(percentile(gaps, 99) ?? 0, 1) },
          };
        } finally {
          await sink.close();
        }
      },
      // No global dispatch cap: the machine, not the dispatcher's default 2,000/s, limits both runs.
      { SCHEDULER_DISPATCH_RATE: "1000000" },
    );
  ctx.log(`cap accuracy: ${keys} keys × ${jobsPerKey} jobs whose call takes ${callMs} ms, perKeyConcurrency ${cap}, ${slots} worker slots`);
  const keyed = await run(true);
  const most = Math.max(...keyed.open.values());
  const keysOverCap = [...keyed.open.values()].filter((n) => n > cap).length;
  const keysAtCap = [...keyed.open.values()].filter((n) => n === cap).length;
  ctx.log(`  with keys: at most ${most} calls of one key at once (${keysAtCap} keys reached ${cap}, ${keysOverCap} went over); ${keyed.jobsPerSecond} jobs/s`);
  ctx.log(`    ${keyed.meanOpen} calls open on average of ${keys * cap} allowed; a freed slot empty for p50 ${keyed.refill.p50} ms, p99 ${keyed.refill.p99} ms`);
  const plain = await run(false);
  ctx.log(`  without keys: ${plain.jobsPerSecond} jobs/s (at most ${Math.max(...plain.open.values())} calls of one label at once)`);
  return {
    keys,
    jobs: jobs.length,
    cap,
    callMs,
    maxConcurrentPerKey: most,
    keysOverCap,
    keysAtCap,
    keyedJobsPerSecond: keyed.jobsPerSecond,
    plainJobsPerSecond: plain.jobsPerSecond,
    throughputRatio: round(keyed.jobsPerSecond / plain.jobsPerSecond, 3),
    keyedMeanOpen: keyed.meanOpen,
    slotRefillP50Ms: keyed.refill.p50,
    slotRefillP99Ms: keyed.refill.p99,
  };
}

// ---------------------------------------------------------------------------------------------
// Rate accuracy: keys at perKeyRate 5 per second with a backlog each, two schedulers; calls per key per whole
// second at the sink, after the first.

export interface RateAccuracyResult extends Omit<RateCheck, "histogram"> {
  keys: number;
  seconds: number;
  ratePerSecond: number;
  /** Key-seconds by calls in the second ("5": n), every whole second after the first. */
  histogram: Record<string, number>;
  /** Calls per second of all keys together over the judged seconds (keys × rate expected). */
  meanCallsPerSecond: number;
  /** Shards each scheduler held (by its id) while the keys ran; the tenant's shard and its holder. */
  shardsPerScheduler: Record<string, number>;
  tenantShardHolder: string;
}

export async function rateAccuracy(ctx: Context, keys: number, seconds: number): Promise<RateAccuracyResult> {
  const rate = 5;
  return withTick(async (cluster) => {
    await cluster.startWorker({ WORKER_CONCURRENCY: "200" });
    await cluster.startScheduler();
    await cluster.startScheduler();
    const shardsPerScheduler = await leasesSettled(ctx, cluster, 2);
    const sink = await startKeyedSink(0);
    try {
      const tenant = await cluster.createTenant({ maxInFlight: 100_000 });
      const holder = (await cluster.pool.query<{ holder: string }>(`SELECT holder FROM shard_leases WHERE shard = $1`, [tenant.shard])).rows[0]?.holder ?? "none";
      await cluster.pool.query(`UPDATE queues SET per_key_rate_limit = $2, per_key_rate_period_ms = 1000 WHERE id = $1`, [tenant.queueId, rate]);
      const names = Array.from({ length: keys }, (_, k) => `r${String(k).padStart(4, "0")}`);
      // A backlog larger than the run can take (the burst, then the rate for the whole run and more), every job
      // due at one instant a few seconds ahead: every key starts at once and is over its rate all the time.
      const perKey = rate * (seconds + 5);
      const dueAt = new Date((await databaseNow(cluster.pool)) + 2_000 + keys * perKey * 0.1);
      ctx.log(`rate accuracy: ${keys} keys at ${rate}/s with ${perKey} jobs each, for ${seconds} s; two schedulers (shards ${JSON.stringify(shardsPerScheduler)}, the tenant's held by ${holder})`);
      await insertKeyedJobs(cluster, tenant, sink.url, Array.from({ length: keys * perKey }, (_, i) => ({ key: names[i % keys]!, seq: Math.floor(i / keys) })), { runAt: dueAt });
      const late = Date.now() - dueAt.getTime();
      if (late > 0) ctx.log(`  (the insert ended ${late} ms after the jobs were due)`);
      await until(ctx, "first call", async () => ({ ok: sink.calls.length > 0, progress: "none yet" }), 60_000);
      const origin = Math.min(...sink.calls.map((c) => c.start));
      await sleep(Math.max(0, origin + seconds * 1_000 - sinkNow()) + 200);
      const startsByKey = new Map<string, number[]>();
      for (const c of sink.calls) startsByKey.set(c.key, [...(startsByKey.get(c.key) ?? []), c.start]);
      const check = checkRate(startsByKey, names, origin, seconds, rate);
      const judged = sink.calls.filter((c) => c.start >= origin + 1_000 && c.start < origin + seconds * 1_000).length;
      const result: RateAccuracyResult = {
        keys,
        seconds,
        ratePerSecond: rate,
        ...check,
        meanCallsPerSecond: round(judged / Math.max(1, seconds - 1), 1),
        shardsPerScheduler,
        tenantShardHolder: holder,
      };
      ctx.log(`  ${check.keySeconds} key-seconds: largest deviation ${check.maxDeviation}, ${check.keySecondsOff} off by more than 1; calls in a second: ${JSON.stringify(check.histogram)}; ${result.meanCallsPerSecond} calls/s in all`);
      for (const w of check.worst) ctx.log(`    ${w.key} second ${w.second}: ${w.calls} calls`);
      return result;
    } finally {
      await sink.close();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Debounce: trailing-debounce creates through the API over many keys, then one run per window with its last payload.

export interface DebounceResult {
  creates: number;
  keys: number;
  periodMs: number;
  /** The pace offered: every create sent within this many seconds if the API keeps up. */
  offeredSeconds: number;
  /** When the last create was answered, from the first send. */
  createSeconds: number;
  createsPerSecond: number;
  /** Creates not answered 201 (a new window) or 200 (folded into one). */
  createErrors: number;
  /** Creates answered 201 (a window opened) and 200 with debouncedInto. */
  opened: number;
  folded: number;
  windows: number;
  maxWindowsPerKey: number;
  runs: number;
  windowsRunOnce: number;
  windowsRunOnceWithLastPayload: number;
  windowsNotRun: number;
  windowsRunTwiceOrMore: number;
  strayRuns: number;
}

interface BatchAnswer {
  results: { index: number; status: number; debouncedInto?: string; job?: { id: string } }[];
}

export async function debounce(ctx: Context, creates: number, keys: number, offeredSeconds = 10): Promise<DebounceResult> {
  const periodMs = 2_000;
  // Lanes of batches in flight at once, each with keys of its own: a key's creates are sent one batch after the
  // other, so its last create is the last one sent (concurrent batches sharing a key would race for "last").
  const lanes = 4;
  // Batches of up to 1,000 (the endpoint's most), at least 20 a lane over the offered time: a key's creates come
  // well within the period of each other while the API keeps up, so each key has one window.
  const perLane = Math.ceil(creates / lanes);
  const perBatch = Math.min(1_000, Math.ceil(perLane / (2 * offeredSeconds)));
  const batchesPerLane = Math.ceil(perLane / perBatch);
  const consoleApp = await startConsole();
  const sink = await startKeyedSink(0);
  const api = new Pool(consoleApp.url, { connections: lanes, pipelining: 1 });
  try {
    return await withTick(
      async (cluster) => {
        await cluster.startScheduler();
        await cluster.startWorker();
        const names = Array.from({ length: keys }, (_, k) => `d${String(k).padStart(5, "0")}`);
        const laneKeys = Array.from({ length: lanes }, (_, l) => names.filter((_, k) => k % lanes === l));
        const answered: DebounceCreate[] = [];
        let errors = 0;
        let opened = 0;
        let folded = 0;
        let lastAnswer = 0;
        ctx.log(`debounce: ${creates} trailing creates (period ${periodMs} ms) over ${keys} keys through POST /jobs/batch, ${perBatch} a request, ${lanes} lanes in parallel, offered over ${offeredSeconds} s`);
        const started = performance.now();
        await Promise.all(
          laneKeys.map(async (own, l) => {
            const count = Math.min(perLane, creates - l * perLane);
            for (let b = 0; b * perBatch < count; b++) {
              // The lanes' batches evenly over the offered time, the lanes staggered.
              const wait = started + ((b + l / lanes) * offeredSeconds * 1_000) / batchesPerLane - performance.now();
              if (wait > 0) await sleep(wait);
              const items = Array.from({ length: Math.min(perBatch, count - b * perBatch) }, (_, i) => {
                const n = b * perBatch + i;
                return { key: own[n % own.length]!, seq: n * lanes + l };
              });
              const res = await api.request({
                path: "/api/v1/jobs/batch",
                method: "POST",
                headers: { authorization: `Bearer ${consoleApp.apiKey}`, "content-type": "application/json" },
                body: JSON.stringify({ jobs: items.map((it) => ({ target: { url: sink.url, body: JSON.stringify(it) }, debounce: { key: it.key, periodMs, mode: "trailing" } })) }),
              });
              const text = await res.body.text();
              lastAnswer = performance.now();
              if (res.statusCode !== 200) {
                errors += items.length;
                ctx.log(`  batch answered ${res.statusCode}: ${text.slice(0, 200)}`);
                continue;
              }
              for (const r of (JSON.parse(text) as BatchAnswer).results) {
                const it = items[r.index]!;
                const jobId = r.debouncedInto ?? r.job?.id;
                if ((r.status !== 201 && r.status !== 200) || !jobId) {
                  errors++;
                  continue;
                }
                if (r.status === 201) opened++;
                else folded++;
                answered.push({ key: it.key, seq: it.seq, jobId });
              }
            }
          }),
        );
        const createSeconds = (lastAnswer - started) / 1_000;
        ctx.log(`  ${creates} creates answered in ${round(createSeconds, 2)} s (${Math.round(creates / createSeconds)}/s): ${opened} opened a window, ${folded} folded, ${errors} errors`);
        const windowCount = new Set(answered.map((a) => a.jobId)).size;
        await until(ctx, "debounced runs", async () => {
          const live = await liveJobs(consoleApp.pool, consoleApp.tenant.id);
          return { ok: live === 0 && sink.calls.length >= windowCount, progress: `${sink.calls.length} runs of ${windowCount} windows, ${live} jobs not finished` };
        }, 300_000);
        // A run more than its window's one would come right after: wait a dispatch round or two for it.
        await sleep(1_000);
        const check = checkDebounce(answered, sink.calls.map((c) => ({ jobId: c.jobId, seq: c.seq })));
        const result: DebounceResult = {
          ...check,
          creates,
          keys,
          periodMs,
          offeredSeconds,
          createSeconds: round(createSeconds, 2),
          createsPerSecond: Math.round(creates / createSeconds),
          createErrors: errors,
          opened,
          folded,
          runs: sink.calls.length,
        };
        ctx.log(
          `  ${result.runs} runs for ${check.windows} windows of ${check.keys} keys (at most ${check.maxWindowsPerKey} a key): ${check.windowsRunOnce} ran once, ${check.windowsRunOnceWithLastPayload} with their last payload; ${check.windowsNotRun} never ran, ${check.windowsRunTwiceOrMore} ran twice or more, ${check.strayRuns} stray runs`,
        );
        return result;
      },
      {},
      { databaseUrl: consoleApp.databaseUrl, redisPrefix: consoleApp.redisPrefix },
    );
  } finally {
    await api.close();
    await sink.close();
    await consoleApp.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Claim latency: the claim the dispatcher runs, over 1,000,000 due jobs of 100,000 keys, against the same claim
// over 10,000 due jobs without keys.

interface ClaimProbe {
  p50Ms: number;
  p99Ms: number;
  claimed: number;
}

export interface KeyClaimResult {
  plainJobs: number;
  plain: ClaimProbe;
  /** The same number of due jobs as without keys, over 100 keys: the keyed claim's own cost, apart from the key count. */
  fewKeys: ClaimProbe & { keys: number; jobs: number };
  keyedKeys: number;
  keyedJobs: number;
  keyed: ClaimProbe;
  /** keyed p50 / plain p50. */
  ratio: number;
}

/**
 * The claim of 100 as the dispatcher runs it for the tenant (rated and keyed from roundFacts; the keyed queues'
 * cursors advanced after each claim, so the key scan starts where the round robin is), timed `runs` times after
 * 10 untimed, each in a transaction rolled back.
 */
async function probeKeyClaim(pool: pg.Pool, tenant: { id: string; shard: number }, runs: number): Promise<ClaimProbe> {
  const client = await pool.connect();
  const times: number[] = [];
  let claimed = 0;
  try {
    const facts = await sql.roundFacts(client, tenant.shard, [tenant.id]);
    const keyed = facts.keyed.has(tenant.id);
    const cursors: Record<string, string> = {};
    for (let i = 0; i < 10 + runs; i++) {
      await client.query("BEGIN");
      const started = performance.now();
      const rows = await sql.claimDueJobs(client, { shard: tenant.shard, epoch: "1", tenantId: tenant.id, limit: 100, rated: facts.rated.has(tenant.id), keyed, ...(keyed ? { keyCursors: cursors } : {}) });
      const ms = performance.now() - started;
      await client.query("ROLLBACK");
      if (keyed) sql.advanceKeyCursors(cursors, rows);
      if (i >= 10) {
        times.push(ms);
        claimed += rows.length;
      }
    }
  } finally {
    client.release();
  }
  return { p50Ms: round(percentile(times, 50)!, 2), p99Ms: round(percentile(times, 99)!, 2), claimed: Math.round(claimed / runs) };
}

export async function keyClaimLatency(ctx: Context, keys: number, jobs: number, plainJobs = 10_000): Promise<KeyClaimResult> {
  const db = await createTestDatabase(testServerUrl());
  const pool = createPool(db.url, { max: 2 });
  try {
    // No keys first, on a small table: the claim "claim flat" (scale) measures at 10,000 jobs.
    const plain = await createTestTenant(pool, { shardCount: 16, maxInFlight: 1_000_000 });
    await pool.query(
      `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, updated_at)
       SELECT gen_random_uuid(), $1, $2, $3, now() - interval '1 minute', 'http://127.0.0.1:9/never', now() FROM generate_series(1, $4::int)`,
      [plain.id, plain.queueId, plain.shard, plainJobs],
    );
    await pool.query("VACUUM ANALYZE jobs");
    const plainProbe = await probeKeyClaim(pool, plain, 200);
    ctx.log(`key claim: ${plainJobs.toLocaleString("en")} due jobs without keys: claim of 100 p50 ${plainProbe.p50Ms} ms, p99 ${plainProbe.p99Ms} ms (${plainProbe.claimed} claimed)`);
    await pool.query(`DELETE FROM jobs WHERE tenant_id = $1`, [plain.id]);

    // A keyed queue as a busy one is: a cap and a rate per key, every key known (a flow_keys row), its due jobs
    // spread evenly over its keys. First the same number of jobs as above over 100 keys (reported, not judged),
    // then `jobs` over `keys`.
    const keyedTenant = async (count: number, over: number) => {
      const t = await createTestTenant(pool, { shardCount: 16, maxInFlight: 1_000_000 });
      await pool.query(`UPDATE queues SET per_key_concurrency = 2, per_key_rate_limit = 5, per_key_rate_period_ms = 1000 WHERE id = $1`, [t.queueId]);
      for (let i = 0; i < count; i += 100_000) {
        await pool.query(
          `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, flow_key, updated_at)
           SELECT gen_random_uuid(), $1, $2, $3, now() - interval '1 minute', 'http://127.0.0.1:9/never', 'k' || lpad((g % $5::int)::text, 6, '0'), now()
             FROM generate_series($4::int, least($4::int + 99999, $6::int - 1)) g`,
          [t.id, t.queueId, t.shard, i, over, count],
        );
        if (count > 100_000) ctx.log(`  ${Math.min(count, i + 100_000).toLocaleString("en")} inserted`);
      }
      await pool.query(`INSERT INTO flow_keys (queue_id, key, tenant_id) SELECT $1, 'k' || lpad(g::text, 6, '0'), $2 FROM generate_series(0, $3::int - 1) g`, [t.queueId, t.id, over]);
      await pool.query("VACUUM ANALYZE jobs");
      await pool.query("ANALYZE flow_keys");
      return t;
    };
    const few = await keyedTenant(plainJobs, 100);
    const fewProbe = await probeKeyClaim(pool, few, 200);
    ctx.log(`key claim: ${plainJobs.toLocaleString("en")} due jobs over 100 keys (perKeyConcurrency 2, perKeyRate 5/s): p50 ${fewProbe.p50Ms} ms, p99 ${fewProbe.p99Ms} ms (${fewProbe.claimed} claimed)`);
    await pool.query(`DELETE FROM jobs WHERE tenant_id = $1`, [few.id]);
    ctx.log(`key claim: ${jobs.toLocaleString("en")} due jobs over ${keys.toLocaleString("en")} keys (perKeyConcurrency 2, perKeyRate 5/s)`);
    const keyed = await keyedTenant(jobs, keys);
    const keyedProbe = await probeKeyClaim(pool, keyed, 200);
    const result: KeyClaimResult = { plainJobs, plain: plainProbe, fewKeys: { ...fewProbe, keys: 100, jobs: plainJobs }, keyedKeys: keys, keyedJobs: jobs, keyed: keyedProbe, ratio: round(keyedProbe.p50Ms / plainProbe.p50Ms, 3) };
    ctx.log(`  claim of 100 over the keys: p50 ${keyedProbe.p50Ms} ms, p99 ${keyedProbe.p99Ms} ms (${keyedProbe.claimed} claimed): ×${result.ratio} of the claim without keys`);
    return result;
  } finally {
    await pool.end();
    await db.drop();
  }
}
