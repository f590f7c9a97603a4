import { readFile } from "node:fs/promises";
import { sql } from "@tick/db";
import { createTestDatabase, testServerUrl } from "@tick/db/testing";
import { matching, seriesValue, testRedisUrl } from "@tick/testing";
import { Redis } from "ioredis";
import pg from "pg";
import { costPerJob, round, snapshotCost, type CostPerJob } from "./cost.js";
import { CEILING, PEERS, startBareClient, startPeer, type Peer } from "./peers.js";
import type { BenchSink } from "./sink.js";
import { liveJobs, startTickCluster, type TickCluster, type TickTenant } from "./tick.js";

export interface Context {
  sink: BenchSink;
  log: (line: string) => void;
  quick: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const percentile = (values: number[], p: number) => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
};

/** Polls until `done` or the deadline; logs progress every few seconds so a long wait shows it is moving. */
export async function until(ctx: Context, what: string, done: () => Promise<{ ok: boolean; progress: string }>, timeoutMs: number, pollMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastLog = Date.now();
  for (;;) {
    const state = await done();
    if (state.ok) return;
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${timeoutMs / 1000} s (${state.progress})`);
    if (Date.now() - lastLog > 5_000) {
      ctx.log(`  ${what}: ${state.progress}`);
      lastLog = Date.now();
    }
    await sleep(pollMs);
  }
}

/**
 * Tick's processes on a fresh database (dropped after), or on `on`'s database and Redis prefix (a console the
 * scenario started, which keeps them).
 */
export async function withTick<T>(
  fn: (cluster: TickCluster, databaseUrl: string, redis: Redis) => Promise<T>,
  env: Record<string, string> = {},
  on?: { databaseUrl: string; redisPrefix: string },
): Promise<T> {
  const db = on ? null : await createTestDatabase(testServerUrl());
  const databaseUrl = on?.databaseUrl ?? db!.url;
  const redis = new Redis(testRedisUrl());
  const cluster = await startTickCluster({ databaseUrl, redisUrl: testRedisUrl(), env, ...(on ? { prefix: on.redisPrefix } : {}) });
  try {
    return await fn(cluster, databaseUrl, redis);
  } finally {
    await cluster.close();
    redis.disconnect();
    await db?.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// 1 + 6. Burn-down throughput and cost per job, Tick and the peers, one after the other in one run.

export type BurnDownSystem = "tick" | Peer | typeof CEILING;

export interface BurnDownResult {
  system: BurnDownSystem;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /**
   * The whole machine's CPU time (every process: the system's, Postgres, Redis, the sink) while the jobs
   * burned down, per job, in ms: steadier than jobs/s between runs on a shared machine, and what a
   * CPU-bound system's rate comes down to.
   */
  machineCpuMsPerJob: number;
  cost: CostPerJob;
  /** jobs/s of every round, in the order run; the figures above are the median round's. */
  roundRates: number[];
  /**
   * Tick only: the worker's attempt slots over the timed window, as means (tick_worker_slots_*_seconds_total
   * rates): calls in flight against the call slots' capacity, attempts waiting for a call slot, and the
   * same for start slots. Calls well below capacity with nothing waiting: the worker was short of work.
   */
  workerSlots?: WorkerSlotsMeans;
  /** The median round's delivery over time (deliveryTimeline); absent in reports from before it existed. */
  timeline?: BurnDownTimeline;
}

export interface BurnDownTimeline {
  enqueuedMs: number;
  firstCallMs: number | null;
  lastCallMs: number | null;
  doneMs: number;
  callsPerBucket: number[];
}

interface WorkerSlotsMeans {
  capacity: number;
  callsBusy: number;
  waitingForCall: number;
  startsBusy: number;
  waitingForStart: number;
}

/** The worker's slot totals from its /metrics (tick_worker_slots_*_seconds_total, tick_worker_slots capacity). */
async function workerSlotTotals(healthPort: number): Promise<{ capacity: number; values: Map<string, number> }> {
  const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
  const values = new Map<string, number>();
  for (const name of ["tick_worker_slots_busy_seconds_total", "tick_worker_slots_waiting_seconds_total"]) {
    for (const s of matching(text, name)) values.set(`${name}/${s.labels.slot}`, s.value);
  }
  return { capacity: seriesValue(text, "tick_worker_slots", { slot: "call", state: "capacity" }), values };
}

function slotMeans(before: Awaited<ReturnType<typeof workerSlotTotals>>, after: Awaited<ReturnType<typeof workerSlotTotals>>, seconds: number): WorkerSlotsMeans {
  const mean = (key: string) => Math.round((((after.values.get(key) ?? 0) - (before.values.get(key) ?? 0)) / seconds) * 10) / 10;
  return {
    capacity: after.capacity,
    callsBusy: mean("tick_worker_slots_busy_seconds_total/call"),
    waitingForCall: mean("tick_worker_slots_waiting_seconds_total/call"),
    startsBusy: mean("tick_worker_slots_busy_seconds_total/start"),
    waitingForStart: mean("tick_worker_slots_waiting_seconds_total/start"),
  };
}

/** CPU time used by the whole machine so far (every CPU's busy time, from /proc/stat), in ms; 0 where unavailable. */
export async function machineCpuMs(): Promise<number> {
  const stat = await readFile("/proc/stat", "utf8").catch(() => "");
  const fields = stat.split("\n")[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  if (fields.length < 8) return 0;
  // user nice system idle iowait irq softirq steal: busy is what ran here (not idle, iowait or steal).
  const [user, nice, system, , , irq, softirq] = fields as [number, number, number, number, number, number, number];
  return ((user + nice + system + irq + softirq) * 1000) / 100;
}

/**
 * CPU time (user + system, ms) of every process on the machine so far, summed by role: Postgres,
 * Redis, Tick's scheduler and worker, a peer's worker, and this process (the bench and its sink).
 * BENCH_CPU_BREAKDOWN=1 prints it per job for each burn-down: which process a system's cost lands in.
 */
async function processCpuMs(): Promise<Map<string, number>> {
  const { readdir } = await import("node:fs/promises");
  const byRole = new Map<string, number>();
  const tick = 100; // USER_HZ
  for (const pid of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    const [stat, cmdline] = await Promise.all([readFile(`/proc/${pid}/stat`, "utf8").catch(() => ""), readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")]);
    if (!stat || !cmdline) continue; // gone, or a kernel thread
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const fields = stat.slice(close + 2).split(" ");
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / tick;
    const args = cmdline.split("\0");
    let role = comm;
    if (Number(pid) === process.pid) role = "bench+sink";
    else if (comm === "postgres") role = "postgres";
    else if (comm.startsWith("redis")) role = "redis";
    else if (args.some((a) => a.endsWith("apps/scheduler/dist/main.js"))) role = "tick-scheduler";
    else if (args.some((a) => a.endsWith("apps/worker/dist/main.js"))) role = "tick-worker";
    else if (args.some((a) => a.endsWith("peer-worker.js"))) role = "peer-worker";
    if (ms > 0) byRole.set(role, (byRole.get(role) ?? 0) + ms);
  }
  return byRole;
}

const NO_COST: CostPerJob = { commitsPerJob: 0, walBytesPerJob: 0, redisCommandsPerJob: 0 };

/**
 * Burns n jobs down through each system, `rounds` times. This machine's speed drifts by ±20% within a
 * minute (neighbours on the host), so one run per system compares luck as much as systems: every round
 * runs all systems, each round in a rotated order (none always first or last), and a system's figures
 * are those of its median round by jobs/s, with every round's rate kept beside them.
 */
export async function burnDown(ctx: Context, n: number, concurrency: number, systems: BurnDownSystem[] = [CEILING, "tick", ...PEERS], rounds = 1): Promise<BurnDownResult[]> {
  const runs = new Map<BurnDownSystem, BurnDownResult[]>(systems.map((s) => [s, []]));
  for (let r = 0; r < rounds; r++) {
    const order = systems.map((_, i) => systems[(i + r) % systems.length]!);
    if (rounds > 1) ctx.log(`burn-down round ${r + 1} of ${rounds}: ${order.join(", ")}`);
    for (const result of await burnDownOnce(ctx, n, concurrency, order)) runs.get(result.system)!.push(result);
  }
  return systems.map((system) => {
    const all = runs.get(system)!;
    const median = [...all].sort((a, b) => a.jobsPerSecond - b.jobsPerSecond)[Math.floor((all.length - 1) / 2)]!;
    return { ...median, roundRates: all.map((x) => x.jobsPerSecond) };
  });
}

async function burnDownOnce(ctx: Context, n: number, concurrency: number, systems: BurnDownSystem[]): Promise<BurnDownResult[]> {
  const results: BurnDownResult[] = [];
  // The sink runs in this process and starts cold (JIT, connections): it is warmed with 1,000 calls before
  // any system is timed, so the first one timed does not pay for it.
  const warm = await startBareClient({ jobs: 1_000, url: ctx.sink.url, concurrency });
  try {
    await warm.enqueue([]);
    await until(ctx, "sink warm-up", async () => ({ ok: ctx.sink.distinct() >= 1_000, progress: `${ctx.sink.distinct()} of 1000` }), 60_000);
  } finally {
    await warm.close();
  }
  for (const system of systems) {
    ctx.log(`burn-down: ${system}, ${n} jobs, ${concurrency} concurrent calls`);
    ctx.sink.reset();
    const keys = Array.from({ length: n }, (_, i) => ({ key: `${system}-${i}`, url: ctx.sink.url }));
    // databaseUrl null: no store at all (the bare client), so no cost to read.
    const measure = async (
      databaseUrl: string | null,
      redis: Redis | null,
      enqueue: (jobs: typeof keys) => Promise<void>,
      remaining: () => Promise<number>,
      /** Tick's worker, whose slots are read around the timed window. */
      workerHealthPort?: number,
    ) => {
      // The store is asked only once the sink has seen every job: a count every 50 ms while the jobs run
      // is load on the system measured (Tick's cost 3.5 ms a call), the same for every system.
      const burnedDown = (label: string, count: number, timeoutMs: number) =>
        until(ctx, label, async () => {
          const delivered = ctx.sink.distinct();
          if (delivered < count) return { ok: false, progress: `${delivered} of ${count} delivered` };
          const left = await remaining();
          return { ok: left === 0, progress: `${delivered} of ${count} delivered, ${left} not finished` };
        }, timeoutMs);
      // A queue system's processes start cold (JIT, connection pools, caches); a production one runs warm.
      // Each burns down a run of the same size first, untimed (the bare client's process has no store to
      // warm: the sink warm-up above already ran the same calls). A run of 1,000 was not enough: a profile of
      // the timed window (perf, whole machine) still had Tick's worker compiling its hot path with TurboFan on
      // its helper threads, 9-10 % of all samples (pg-boss's worker 2.7 %); after 10,000, 1.8 %.
      if (databaseUrl || redis) {
        const warmUpJobs = n;
        const warmKeys = Array.from({ length: warmUpJobs }, (_, i) => ({ key: `${system}-warm-${i}`, url: ctx.sink.url }));
        await enqueue(warmKeys);
        await burnedDown(`${system} warm-up`, warmUpJobs, 600_000);
        ctx.sink.reset();
      }
      const before = databaseUrl ? await snapshotCost(databaseUrl, redis) : null;
      const breakdown = process.env.BENCH_CPU_BREAKDOWN ? await processCpuMs() : null;
      const slotsBefore = workerHealthPort ? await workerSlotTotals(workerHealthPort) : null;
      const cpuBefore = await machineCpuMs();
      const started = performance.now();
      await enqueue(keys);
      const enqueuedMs = performance.now() - started;
      await burnedDown(system, n, 600_000);
      const seconds = (performance.now() - started) / 1000;
      const timeline = deliveryTimeline(ctx.sink.arrivals(), started, enqueuedMs, seconds * 1000);
      const machineCpuMsPerJob = Math.round(((await machineCpuMs()) - cpuBefore) / n * 1000) / 1000;
      const cost = databaseUrl && before ? await costPerJob(databaseUrl, before, await snapshotCost(databaseUrl, redis), n) : NO_COST;
      const result: BurnDownResult = { system, jobs: n, seconds: round(seconds), jobsPerSecond: Math.round(n / seconds), machineCpuMsPerJob, cost, roundRates: [], timeline };
      ctx.log(`  ${system}: ${result.jobsPerSecond} jobs/s (${result.seconds} s, ${machineCpuMsPerJob} ms of machine CPU per job)`);
      ctx.log(
        `    timeline: enqueued by ${timeline.enqueuedMs} ms, first call ${timeline.firstCallMs} ms, last ${timeline.lastCallMs} ms, done ${timeline.doneMs} ms; calls per ${TIMELINE_BUCKET_MS} ms: ${timeline.callsPerBucket.join(" ")}`,
      );
      if (workerHealthPort && slotsBefore) {
        const s = slotMeans(slotsBefore, await workerSlotTotals(workerHealthPort), seconds);
        result.workerSlots = s;
        ctx.log(
          `    worker slots (means): calls in flight ${s.callsBusy} of ${s.capacity}, waiting for a call ${s.waitingForCall}; start slots held ${s.startsBusy} of ${s.capacity}, waiting for one ${s.waitingForStart}`,
        );
      }
      if (breakdown) {
        const after = await processCpuMs();
        const perJob = [...after]
          .map(([role, ms]) => [role, (ms - (breakdown.get(role) ?? 0)) / n] as const)
          .filter(([, ms]) => ms >= 0.005)
          .sort((a, b) => b[1] - a[1]);
        ctx.log(`    CPU ms per job by process: ${perJob.map(([role, ms]) => `${role} ${ms.toFixed(3)}`).join(", ")}`);
      }
      results.push(result);
    };
    if (system === CEILING) {
      const client = await startBareClient({ jobs: n, url: ctx.sink.url, concurrency });
      try {
        await measure(null, null, (jobs) => client.enqueue(jobs), () => client.remaining());
      } finally {
        await client.close();
      }
    } else if (system === "tick") {
      await withTick(
        async (cluster, databaseUrl, redis) => {
          await cluster.startScheduler();
          await cluster.startWorker();
          const tenant = await cluster.createTenant({ maxInFlight: 10_000 });
          const worker = cluster.processes.find((p) => p.name.startsWith("worker"))!;
          await measure(databaseUrl, redis, (jobs) => cluster.createJobs(tenant, jobs), () => liveJobs(cluster.pool, tenant.id), worker.healthPort);
        },
        // No global dispatch cap (the peers have none); same concurrency as the peers.
        { SCHEDULER_DISPATCH_RATE: "1000000", WORKER_CONCURRENCY: String(concurrency) },
      );
    } else {
      const db = await createTestDatabase(testServerUrl());
      const redis = system === "bullmq" ? new Redis(testRedisUrl()) : null;
      const peer = await startPeer(system, { databaseUrl: db.url, redisUrl: testRedisUrl(), concurrency });
      try {
        await measure(db.url, redis, (jobs) => peer.enqueue(jobs), () => peer.remaining());
      } finally {
        await peer.close();
        redis?.disconnect();
        await db.drop();
      }
    }
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 2. Due-time precision: jobs due at exact instants at a fixed rate; start − due from the database.

export interface PrecisionResult {
  ratePerSecond: number;
  jobs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Attempts that started before their job's due time (must be 0). */
  early: number;
  /** Where the tail comes from: the p99 of due → claimed (the dispatcher) and of claimed → started (broker and worker). */
  split: { claimP99Ms: number; startP99Ms: number };
  /**
   * The jobs over the 500/s limit (50 ms), grouped into windows of due times (a gap under 100 ms joins
   * them): a few windows mean stalls (a pause of some process), many single jobs a steady tail.
   */
  slowWindows: SlowWindow[];
}

export interface SlowWindow {
  /** Due time of the window's first job, ms after the run's first job was due. */
  fromMs: number;
  toMs: number;
  jobs: number;
  maxMs: number;
  /** The largest due → claimed and claimed → started in the window. */
  maxClaimMs: number;
  maxStartMs: number;
}

/** Jobs whose lag exceeds `overMs`, grouped by due time (see PrecisionResult.slowWindows); the 5 largest by jobs. */
export function slowWindows(lags: { due: number[]; lag: number[]; claim: number[]; start: number[] }, overMs: number, gapMs = 100): SlowWindow[] {
  const first = Math.min(...lags.due);
  const slow = lags.due.map((due, i) => ({ due: Math.round(due - first), i })).filter(({ i }) => lags.lag[i]! > overMs).sort((a, b) => a.due - b.due);
  const windows: SlowWindow[] = [];
  for (const { due, i } of slow) {
    let w = windows.at(-1);
    if (!w || due - w.toMs > gapMs) windows.push((w = { fromMs: due, toMs: due, jobs: 0, maxMs: 0, maxClaimMs: 0, maxStartMs: 0 }));
    w.toMs = due;
    w.jobs++;
    w.maxMs = Math.max(w.maxMs, round(lags.lag[i]!, 1));
    w.maxClaimMs = Math.max(w.maxClaimMs, round(lags.claim[i]!, 1));
    w.maxStartMs = Math.max(w.maxStartMs, round(lags.start[i]!, 1));
  }
  return windows.sort((a, b) => b.jobs - a.jobs).slice(0, 5);
}

/**
 * A tenant's first attempts' start − due (ms, database clock), and the same lag split where the scheduler
 * hands over: due → claimed (dispatched_at, the claim transaction's time: the dispatcher's share) and
 * claimed → started (the broker's and the worker's share). One read for all three.
 */
async function firstAttemptLags(pool: pg.Pool, tenantId: string): Promise<{ due: number[]; lag: number[]; claim: number[]; start: number[] }> {
  const { rows } = await pool.query<{ due: number; lag: number; claim: number; start: number }>(
    `SELECT extract(epoch FROM j.due_at) * 1000 AS due, extract(epoch FROM a.started_at - j.due_at) * 1000 AS lag,
            extract(epoch FROM a.dispatched_at - j.due_at) * 1000 AS claim, extract(epoch FROM a.started_at - a.dispatched_at) * 1000 AS start
       FROM history.jobs_all j JOIN history.attempts_all a ON a.job_id = j.id AND a.number = 1
      WHERE j.tenant_id = $1 AND a.started_at IS NOT NULL`,
    [tenantId],
  );
  return { due: rows.map((r) => Number(r.due)), lag: rows.map((r) => Number(r.lag)), claim: rows.map((r) => Number(r.claim)), start: rows.map((r) => Number(r.start)) };
}

/** The p99 of each part of a tenant's lag (firstAttemptLags). */
const splitP99 = (lags: { claim: number[]; start: number[] }) => ({
  claimP99Ms: round(percentile(lags.claim, 99) ?? 0, 1),
  startP99Ms: round(percentile(lags.start, 99) ?? 0, 1),
});

export async function databaseNow(pool: pg.Pool): Promise<number> {
  return (await pool.query<{ now: Date }>(`SELECT now()`)).rows[0]!.now.getTime();
}

export async function precision(ctx: Context, rates: number[], seconds: number): Promise<PrecisionResult[]> {
  return withTick(async (cluster) => {
    await cluster.startScheduler();
    await cluster.startWorker();
    const results: PrecisionResult[] = [];
    for (const rate of rates) {
      ctx.log(`precision: ${rate} jobs/s for ${seconds} s, each due at an exact instant`);
      const tenant = await cluster.createTenant({ maxInFlight: 10_000 });
      const count = rate * seconds;
      // Created ahead of time (a few seconds of slack for the insert), due 1/rate apart.
      const first = (await databaseNow(cluster.pool)) + 2_000 + count / 10;
      const jobs = Array.from({ length: count }, (_, i) => ({ key: `p${rate}-${i}`, url: ctx.sink.url, runAt: new Date(first + Math.round((i * 1000) / rate)) }));
      await cluster.createJobs(tenant, jobs);
      await until(ctx, `precision ${rate}/s`, async () => {
        const left = await liveJobs(cluster.pool, tenant.id);
        return { ok: left === 0, progress: `${left} of ${count} not finished` };
      }, 120_000 + seconds * 1000);
      const parts = await firstAttemptLags(cluster.pool, tenant.id);
      const lags = parts.lag;
      const r: PrecisionResult = {
        ratePerSecond: rate,
        jobs: lags.length,
        p50Ms: round(percentile(lags, 50)!, 1),
        p99Ms: round(percentile(lags, 99)!, 1),
        maxMs: round(Math.max(...lags), 1),
        early: lags.filter((l) => l < 0).length,
        split: splitP99(parts),
        slowWindows: slowWindows(parts, 50),
      };
      ctx.log(`  ${rate}/s: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, max ${r.maxMs} ms, early ${r.early} (p99 due → claimed ${r.split.claimP99Ms} ms, claimed → started ${r.split.startP99Ms} ms)`);
      for (const w of r.slowWindows) {
        ctx.log(`    over 50 ms: ${w.jobs} jobs due +${w.fromMs}–${w.toMs} ms, max ${w.maxMs} ms (due → claimed up to ${w.maxClaimMs}, claimed → started up to ${w.maxStartMs})`);
      }
      results.push(r);
    }
    return results;
  });
}

// ---------------------------------------------------------------------------------------------
// 3. Fairness: a quiet tenant's lag alone and under two noisy tenants' burst (weights 3 and 1, all
//    three on one shard, where fairness is decided), and the noisy tenants' shares while both wait.

export interface FairnessResult {
  burstJobs: number;
  quietSoloP99Ms: number;
  quietUnderBurstP99Ms: number;
  quietRatio: number;
  /** The p99 of each part of the quiet tenant's lag, alone and under the burst: where its tail comes from. */
  quietSplit: { solo: { claimP99Ms: number; startP99Ms: number }; underBurst: { claimP99Ms: number; startP99Ms: number } };
  weights: [number, number];
  shares: [number, number];
  expectedShares: [number, number];
  shareErrorPct: number;
}

export async function fairness(ctx: Context, burst: number, trickleSeconds: number): Promise<FairnessResult> {
  return withTick(async (cluster) => {
    await cluster.startScheduler();
    await cluster.startWorker();
    const shard = 0;
    const trickle = async (tenant: TickTenant, tag: string, whileRunning: () => boolean) => {
      for (let i = 0; whileRunning(); i++) {
        await cluster.createJobs(tenant, [{ key: `${tag}-${i}`, url: ctx.sink.url }]);
        await sleep(50); // 20 jobs/s
      }
    };
    ctx.log(`fairness: quiet tenant alone for ${trickleSeconds} s`);
    const solo = await cluster.createTenant({ shard });
    const soloEnd = Date.now() + trickleSeconds * 1000;
    await trickle(solo, "solo", () => Date.now() < soloEnd);
    await until(ctx, "quiet alone", async () => ({ ok: (await liveJobs(cluster.pool, solo.id)) === 0, progress: "" }), 60_000);
    const soloLags = await firstAttemptLags(cluster.pool, solo.id);
    const soloP99 = percentile(soloLags.lag, 99)!;

    ctx.log(`fairness: ${burst} jobs from two noisy tenants (weights 3 and 1) while the quiet tenant trickles`);
    const heavy = await cluster.createTenant({ shard, weight: 3, maxInFlight: 10_000 });
    const light = await cluster.createTenant({ shard, weight: 1, maxInFlight: 10_000 });
    const quiet = await cluster.createTenant({ shard });
    const half = Math.floor(burst / 2);
    await Promise.all([
      cluster.createJobs(heavy, Array.from({ length: half }, (_, i) => ({ key: `h-${i}`, url: ctx.sink.url }))),
      cluster.createJobs(light, Array.from({ length: half }, (_, i) => ({ key: `l-${i}`, url: ctx.sink.url }))),
    ]);
    let bursting = true;
    const quietRun = trickle(quiet, "quiet", () => bursting);
    await until(ctx, "burst", async () => {
      const left = await liveJobs(cluster.pool, heavy.id);
      return { ok: left === 0, progress: `heavy tenant: ${left} left` };
    }, 900_000);
    bursting = false;
    await quietRun;
    await until(ctx, "the rest", async () => ({ ok: (await liveJobs(cluster.pool)) === 0, progress: `${await liveJobs(cluster.pool)} left` }), 900_000);
    const quietLags = await firstAttemptLags(cluster.pool, quiet.id);
    const quietP99 = percentile(quietLags.lag, 99)!;

    // Shares while both noisy tenants had work waiting: up to the moment the heavy one ran out.
    const { rows } = await cluster.pool.query<{ tenant_id: string; n: number }>(
      `WITH cutoff AS (SELECT max(a.dispatched_at) AS t FROM history.attempts_all a WHERE a.tenant_id = $1)
       SELECT a.tenant_id, count(*)::int AS n FROM history.attempts_all a, cutoff
        WHERE a.tenant_id = ANY($2::uuid[]) AND a.dispatched_at <= cutoff.t GROUP BY a.tenant_id`,
      [heavy.id, [heavy.id, light.id]],
    );
    const count = (id: string) => rows.find((r) => r.tenant_id === id)?.n ?? 0;
    const total = count(heavy.id) + count(light.id);
    const shares: [number, number] = [round(count(heavy.id) / total, 3), round(count(light.id) / total, 3)];
    const result: FairnessResult = {
      burstJobs: half * 2,
      quietSoloP99Ms: round(soloP99, 1),
      quietUnderBurstP99Ms: round(quietP99, 1),
      // Three decimals: judged against 1.5 as measured (188 / 125 is 1.504, over the limit, not 1.5).
      quietRatio: round(quietP99 / soloP99, 3),
      quietSplit: { solo: splitP99(soloLags), underBurst: splitP99(quietLags) },
      weights: [3, 1],
      shares,
      expectedShares: [0.75, 0.25],
      shareErrorPct: round(Math.abs(shares[0] - 0.75) * 100, 1),
    };
    ctx.log(`  quiet p99 ${result.quietSoloP99Ms} ms alone, ${result.quietUnderBurstP99Ms} ms under the burst; shares ${shares.join(" / ")} for weights 3 / 1`);
    const { solo: a, underBurst: b } = result.quietSplit;
    ctx.log(`  quiet p99 due → claimed ${a.claimP99Ms} / ${b.claimP99Ms} ms, claimed → started ${a.startP99Ms} / ${b.startP99Ms} ms (alone / under the burst)`);
    // The quiet jobs over its limit under the burst, by when they fell due (after the burst began): stalls or a steady tail.
    for (const w of slowWindows(quietLags, soloP99 * 1.5, 500)) {
      ctx.log(`    quiet over ${Math.round(soloP99 * 1.5)} ms: ${w.jobs} jobs due +${w.fromMs}–${w.toMs} ms, max ${w.maxMs} ms (due → claimed up to ${w.maxClaimMs}, claimed → started up to ${w.maxStartMs})`);
    }
    return result;
  });
}

// ---------------------------------------------------------------------------------------------
// 4. Catch-up: an overdue backlog met by a scheduler coming back; dispatches per second against the cap.

export interface CatchUpResult {
  backlog: number;
  capPerSecond: number;
  maxPerSecond: number;
  meanPerSecond: number;
  secondsAboveCap: number;
  seconds: number;
}

export async function catchUp(ctx: Context, backlog: number, cap: number): Promise<CatchUpResult> {
  return withTick(
    async (cluster) => {
      ctx.log(`catch-up: ${backlog} jobs 10 minutes overdue, dispatch capped at ${cap}/s`);
      const tenant = await cluster.createTenant({ maxInFlight: 100_000 });
      const overdue = new Date((await databaseNow(cluster.pool)) - 600_000);
      await cluster.createJobs(tenant, Array.from({ length: backlog }, (_, i) => ({ key: `c-${i}`, url: ctx.sink.url, runAt: overdue })));
      // The scheduler comes back after the downtime.
      await cluster.startWorker();
      await cluster.startScheduler();
      await until(ctx, "catch-up", async () => {
        const left = await liveJobs(cluster.pool, tenant.id);
        return { ok: left === 0, progress: `${left} of ${backlog} left` };
      }, 900_000);
      const { rows } = await cluster.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM history.attempts_all WHERE tenant_id = $1 GROUP BY date_trunc('second', dispatched_at) ORDER BY date_trunc('second', dispatched_at)`,
        [tenant.id],
      );
      // The first and last seconds are partial.
      const full = rows.slice(1, -1).map((r) => r.n);
      const all = rows.map((r) => r.n);
      const result: CatchUpResult = {
        backlog,
        capPerSecond: cap,
        maxPerSecond: Math.max(...all),
        meanPerSecond: Math.round(full.reduce((a, b) => a + b, 0) / Math.max(1, full.length)),
        secondsAboveCap: all.filter((n) => n > cap).length,
        seconds: rows.length,
      };
      ctx.log(`  max ${result.maxPerSecond}/s, mean ${result.meanPerSecond}/s over ${result.seconds} s (cap ${cap}/s)`);
      return result;
    },
    { SCHEDULER_DISPATCH_RATE: String(cap) },
  );
}

// ---------------------------------------------------------------------------------------------
// 5. Scale: the claim with 10,000 and with 1,000,000 scheduled future jobs in the table.

/**
 * The claim statement as the dispatcher runs it, on 2,000 due jobs of a new tenant, before any scheduler
 * runs: its plan (EXPLAIN, literals masked), then 200 timed runs, each in a transaction rolled back.
 */
async function probeClaim(ctx: Context, cluster: TickCluster): Promise<{ p50Ms: number; p99Ms: number; plan: string }> {
  const tenant = await cluster.createTenant({ maxInFlight: 10_000 });
  await cluster.createJobs(tenant, Array.from({ length: 2_000 }, (_, i) => ({ key: `probe-${i}`, url: ctx.sink.url })));
  // Statistics that include the probe's due jobs (autovacuum would analyze them in time; waiting for it
  // made the plan depend on whether it had run yet).
  await cluster.pool.query(`ANALYZE jobs`);
  const claim = { shard: tenant.shard, epoch: "1", tenantId: tenant.id, limit: 100 };
  const timings: number[] = [];
  const plans: string[] = [];
  const client = await cluster.pool.connect();
  try {
    // As the dispatcher claims: a tenant without a rate-limited queue (a new one has none) gets the claim
    // without rate windows. Its plan first, then the timed runs.
    const { rated } = await sql.roundFacts(client, tenant.shard, [tenant.id]);
    const asDispatched = { ...claim, rated: rated.has(tenant.id) };
    await sql.claimDueJobs(explainer(client, plans), asDispatched);
    for (let i = 0; i < 200; i++) {
      await client.query("BEGIN");
      const t0 = performance.now();
      await sql.claimDueJobs(client, asDispatched);
      timings.push(performance.now() - t0);
      await client.query("ROLLBACK");
    }
  } finally {
    client.release();
  }
  await cluster.pool.query(`DELETE FROM jobs WHERE tenant_id = $1`, [tenant.id]);
  return { p50Ms: round(percentile(timings, 50)!), p99Ms: round(percentile(timings, 99)!), plan: normalizePlan(plans[0] ?? "") };
}

/** Starts a scheduler and a worker, then burns `dueJobs` jobs of a new tenant down end to end; jobs/s. */
async function burnDownThrough(ctx: Context, cluster: TickCluster, label: string, dueJobs: number): Promise<number> {
  await cluster.startScheduler();
  await cluster.startWorker();
  const workTenant = await cluster.createTenant({ maxInFlight: 10_000 });
  const started = performance.now();
  await cluster.createJobs(workTenant, Array.from({ length: dueJobs }, (_, i) => ({ key: `${label}-${i}`, url: ctx.sink.url })));
  await until(ctx, `${label} burn-down`, async () => ({ ok: (await liveJobs(cluster.pool, workTenant.id)) === 0, progress: "" }), 600_000);
  return Math.round(dueJobs / ((performance.now() - started) / 1000));
}

export interface ScaleResult {
  futureJobs: number;
  claimP50Ms: number;
  claimP99Ms: number;
  schedulerRssMb: number;
  burnDownJobsPerSecond: number;
}

export async function scale(ctx: Context, futureCounts: number[], dueJobs: number): Promise<ScaleResult[]> {
  const results: ScaleResult[] = [];
  for (const future of futureCounts) {
    results.push(
      await withTick(async (cluster) => {
        ctx.log(`scale: ${future} scheduled future jobs (100 tenants, all shards), then ${dueJobs} due jobs`);
        const tenants: TickTenant[] = [];
        for (let i = 0; i < 100; i++) tenants.push(await cluster.createTenant({ maxInFlight: 10_000 }));
        const perTenant = Math.ceil(future / tenants.length);
        for (const [i, t] of tenants.entries()) {
          await cluster.pool.query(
            `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, updated_at)
             SELECT gen_random_uuid(), $1, $2, $3, now() + interval '1 day' + make_interval(secs => g), 'http://127.0.0.1:9/never', now()
               FROM generate_series(1, $4) AS g`,
            [t.id, t.queueId, t.shard, perTenant],
          );
          if (i % 20 === 19) ctx.log(`  ${((i + 1) * perTenant).toLocaleString("en")} future jobs inserted`);
        }
        await cluster.pool.query(`VACUUM ANALYZE jobs`);
        const claim = await probeClaim(ctx, cluster);
        // Then real work end to end with the future jobs in place.
        const burnDownJobsPerSecond = await burnDownThrough(ctx, cluster, "scale", dueJobs);
        const memory = await cluster.memory();
        const r: ScaleResult = {
          futureJobs: perTenant * tenants.length,
          claimP50Ms: claim.p50Ms,
          claimP99Ms: claim.p99Ms,
          schedulerRssMb: round((memory["scheduler-1"] ?? 0) / 2 ** 20, 1),
          burnDownJobsPerSecond,
        };
        ctx.log(`  claim of 100: p50 ${r.claimP50Ms} ms, p99 ${r.claimP99Ms} ms; scheduler RSS ${r.schedulerRssMb} MB; ${r.burnDownJobsPerSecond} jobs/s`);
        return r;
      }, { SCHEDULER_DISPATCH_RATE: "1000000" }),
    );
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 6. History: the claim with no history and with millions of finished jobs, and retention
// deleting expired history in bounded batches while jobs burn down.

export interface HistoryResult {
  historyJobs: number;
  claimP50Ms: number;
  claimP99Ms: number;
  /** The claim statement's plan (EXPLAIN, costs off): the same text whatever the history size. */
  plan: string;
  burnDownJobsPerSecond: number;
  /** History jobs the maintenance loop deleted (past retention) while the burn-down ran. */
  historyDeletedDuringBurnDown: number;
  /** Of all jobs, those in the hot table when the burn-down ended (live work plus the last finished). */
  hotTableJobs: number;
}

/** A plan's text without the literals that differ between runs (tenant ids, shard numbers). */
function normalizePlan(plan: string): string {
  return plan.replace(/'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'::uuid/g, "$TENANT").replace(/shard = \d+/g, "shard = $SHARD");
}

/** Runs `statement` as EXPLAIN (COSTS OFF) instead of executing it: the plan of exactly what the caller sends. */
function explainer(client: pg.PoolClient, plans: string[]) {
  return {
    // Either call form of pg's query; a statement's name is dropped (EXPLAIN is another statement).
    query: async (statement: string | { text: string; values?: unknown[] }, params?: unknown[]) => {
      const [text, values] = typeof statement === "string" ? [statement, params] : [statement.text, statement.values];
      const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN (COSTS OFF) ${text}`, values);
      plans.push(rows.map((r) => r["QUERY PLAN"]).join("\n"));
      return { rows: [], rowCount: 0 };
    },
  } as unknown as pg.PoolClient;
}

export async function history(ctx: Context, historyCounts: number[], dueJobs: number): Promise<HistoryResult[]> {
  const results: HistoryResult[] = [];
  for (const size of historyCounts) {
    results.push(
      await withTick(async (cluster) => {
        ctx.log(`history: ${size.toLocaleString("en")} finished jobs in history (20 tenants, finished 8 to 12 days ago, retention 7 days), 10,000 live future jobs, then ${dueJobs} due jobs`);
        const tenants: TickTenant[] = [];
        for (let i = 0; i < 20; i++) tenants.push(await cluster.createTenant({ maxInFlight: 10_000 }));
        await cluster.pool.query(`SELECT history.ensure_partitions(((now() AT TIME ZONE 'UTC')::date - 13), 14)`);
        const perTenant = Math.ceil(size / tenants.length);
        for (const [i, t] of tenants.entries()) {
          if (perTenant === 0) break;
          await cluster.pool.query(
            `WITH j AS (
               INSERT INTO history.jobs (id, tenant_id, queue_id, shard, status, version, due_at, url, attempt_count, fencing_token, created_at, updated_at, finished_at)
               SELECT gen_random_uuid(), $1, $2, $3, 'succeeded', 4, f - interval '1 second', 'http://127.0.0.1:9/done', 1, 1, f - interval '2 seconds', f, f
                 FROM (SELECT now() - interval '8 days' - make_interval(secs => (g % 345600)) AS f FROM generate_series(1, $4) g) x
               RETURNING id, tenant_id, finished_at
             )
             INSERT INTO history.attempts (id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, dispatched_at, started_at, finished_at, outcome, job_finished_at)
             SELECT gen_random_uuid(), id, tenant_id, 1, 1, 2, 1, 'succeeded', finished_at, finished_at, finished_at, 'success', finished_at FROM j`,
            [t.id, t.queueId, t.shard, perTenant],
          );
          if (i % 5 === 4) ctx.log(`  ${((i + 1) * perTenant).toLocaleString("en")} history jobs (and their attempts) inserted`);
        }
        for (const t of tenants.slice(0, 10)) {
          await cluster.pool.query(
            `INSERT INTO jobs (id, tenant_id, queue_id, shard, due_at, url, updated_at)
             SELECT gen_random_uuid(), $1, $2, $3, now() + interval '1 day' + make_interval(secs => g), 'http://127.0.0.1:9/never', now() FROM generate_series(1, 1000) g`,
            [t.id, t.queueId, t.shard],
          );
        }
        await cluster.pool.query(`VACUUM ANALYZE jobs`);
        await cluster.pool.query(`ANALYZE history.jobs`);
        await cluster.pool.query(`ANALYZE history.attempts`);
        const claim = await probeClaim(ctx, cluster);
        // Then real work end to end while the maintenance loop deletes the expired history in batches.
        const historyBefore = Number((await cluster.pool.query<{ n: string }>(`SELECT count(*) AS n FROM history.jobs`)).rows[0]!.n);
        const burnDownJobsPerSecond = await burnDownThrough(ctx, cluster, "history", dueJobs);
        const historyAfter = Number((await cluster.pool.query<{ n: string }>(`SELECT count(*) AS n FROM history.jobs`)).rows[0]!.n);
        const hot = Number((await cluster.pool.query<{ n: string }>(`SELECT count(*) AS n FROM jobs`)).rows[0]!.n);
        const r: HistoryResult = {
          historyJobs: perTenant * tenants.length,
          claimP50Ms: claim.p50Ms,
          claimP99Ms: claim.p99Ms,
          plan: claim.plan,
          burnDownJobsPerSecond,
          historyDeletedDuringBurnDown: Math.max(0, historyBefore - historyAfter),
          hotTableJobs: hot,
        };
        ctx.log(`  claim of 100: p50 ${r.claimP50Ms} ms, p99 ${r.claimP99Ms} ms; ${r.burnDownJobsPerSecond} jobs/s while ${r.historyDeletedDuringBurnDown.toLocaleString("en")} expired history jobs were deleted`);
        return r;
      }, { SCHEDULER_DISPATCH_RATE: "1000000", SCHEDULER_MAINTENANCE_BATCH: "1000" }),
    );
  }
  return results;
}

/** The width of a burn-down timeline's buckets. */
const TIMELINE_BUCKET_MS = 100;

/**
 * Where a burn-down's time went, from the sink's first arrival of each job: when the enqueue returned, the
 * first and last call, when the store said done, and the calls per bucket (ms since the timed run started).
 * It shows what one rate cannot: a slow start, the enqueue slowing delivery, waves, a long tail.
 */
export function deliveryTimeline(arrivals: readonly number[], startedAt: number, enqueuedMs: number, doneMs: number): BurnDownTimeline {
  const since = arrivals.map((t) => t - startedAt);
  const callsPerBucket: number[] = Array.from({ length: Math.max(1, Math.ceil(doneMs / TIMELINE_BUCKET_MS)) }, () => 0);
  for (const t of since) {
    const i = Math.min(callsPerBucket.length - 1, Math.max(0, Math.floor(t / TIMELINE_BUCKET_MS)));
    callsPerBucket[i]!++;
  }
  return {
    enqueuedMs: Math.round(enqueuedMs),
    firstCallMs: since.length ? Math.round(Math.min(...since)) : null,
    lastCallMs: since.length ? Math.round(Math.max(...since)) : null,
    doneMs: Math.round(doneMs),
    callsPerBucket,
  };
}
