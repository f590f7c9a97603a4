import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type pg from "pg";
import { shardForTenant } from "@tick/db";
import { migrateDeploy } from "@tick/db/migrate";
import type { PhaseRun } from "../checker.js";
import { SHARDS, startCluster, type Cluster } from "../cluster.js";
import type { Random } from "../random.js";
import { startChaosSink, type ChaosSink } from "../sink.js";
import { createTenant, type Op, type Tenant } from "../workload.js";
import { countOutcomes, fetchWithTimeout, measureGap, startCreateLoad, type CreateLoad, type TryOutcome } from "./create-load.js";
import { createHaStack, TEST_TIMINGS } from "./ha-stack.js";
import { checkFailoverLoad, drainJobs, isInRecovery, missingJobs } from "./postgres-failover.js";

const STEADY_MS = 6_000;
/** Region a's shards and region b's (TICK_SHARD_REGIONS, the same for every scheduler). */
const HOME_SHARDS = { a: [0, 1, 2, 3], b: [4, 5, 6, 7] };
const SHARD_REGIONS = `a:0-${SHARDS / 2 - 1},b:${SHARDS / 2}-${SHARDS - 1}`;
/** SCHEDULER_DISPATCH_RATE of the run (jobs/s over all shards), low enough that the catch-up's pace shows. */
const DISPATCH_RATE = 200;
/** Jobs of region a's tenant created right before the loss, due while region a is down: the catch-up. */
const CATCH_UP_JOBS = 400;

export interface RegionFailoverReport {
  scenario: "S18";
  timings: typeof TEST_TIMINGS;
  /** ms from the region's loss to the first create acknowledged by region b's console. */
  rtoMs: number | null;
  /** ms from the region's loss until region b's schedulers held every shard of region a, at higher epochs. */
  shardTakeoverMs: number | null;
  during: Record<TryOutcome, number>;
  acknowledged: number;
  rpoJobs: number;
  rpoKeys: string[];
  /** Jobs of region a's shards that fell due while it was down, and how they were released after the takeover. */
  overdueReleased: { jobs: number; firstAfterLossMs: number | null; spreadMs: number | null };
  /** The catch-up batch: released at what pace (first attempts per second) against SCHEDULER_DISPATCH_RATE. */
  catchUp: { jobs: number; releaseMs: number | null; perSecond: number | null; dispatchRate: number };
  epochs: { shard: number; before: string; takeover: string | null; handedBack: string | null }[];
  /** Writes refused by the shard fence, during the run and after region a's stale processes resumed. */
  staleWritesRefused: { total: number; afterReturn: number };
  /** Region a's old primary, started again, came back as a standby (read-only). */
  oldPrimaryRejoinedAsStandby: boolean;
  /** ms from region a's return until its schedulers held its shards again. */
  handBackMs: number | null;
  duplicateEffects: number;
  rawDuplicateDeliveries: number;
  maxStartLagMs: number | null;
  startLagBoundMs: number | null;
  outcomes: Record<TryOutcome, number>;
  facts: Record<string, number>;
  violations: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A tenant id whose shard is one of `shards`. */
function tenantIdIn(shards: number[]): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shards.includes(shardForTenant(id, SHARDS))) return id;
  }
}

async function leases(pool: pg.Pool) {
  const { rows } = await pool.query<{ shard: number; holder: string | null; epoch: string; live: boolean; stale: string }>(
    `SELECT shard, holder, epoch::text, coalesce(expires_at > now(), false) AS live, stale_writes_rejected::text AS stale FROM shard_leases ORDER BY shard`,
  );
  return rows;
}

/** True when every shard of `shards` is held, live, by a scheduler of `region` (its process names start with it). */
const heldBy = (rows: Awaited<ReturnType<typeof leases>>, shards: number[], region: string) =>
  shards.every((s) => rows.some((r) => r.shard === s && r.live && r.holder?.startsWith(`${region}-`)));

/**
 * S18 with a real HA stack: two regions, each with its console, schedulers, worker and Redis; shards 0-3
 * at home in region a, 4-7 in region b (TICK_SHARD_REGIONS); one Patroni cluster with the primary in region
 * a and a synchronous standby in region b; etcd with a member in each region and a third in a witness site,
 * so that it keeps a quorum; an HAProxy per region. Under a steady load of creates (through region b's
 * console: clients reach the surviving region) region a is lost at once: its Postgres member, etcd member
 * and HAProxy are killed, its apps and Redis are frozen (SIGSTOP: they come back later with everything they
 * believed, as after a partition). Region b takes over: its standby is promoted, its schedulers take region
 * a's shards with higher epochs and release what fell due. Then region a returns: its old primary must
 * rejoin as a standby, its stale processes must not dispatch (the shard fence refuses them), region b hands
 * the shards back, and no job has two effects.
 */
export async function runRegionFailover(options: { log: (line: string) => void; logDir: string; random: Random }): Promise<RegionFailoverReport> {
  const { random } = options;
  const log = (line: string) => options.log(`S18: ${line}`);
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-ha-"));
  const stack = await createHaStack({ baseDir, scope: `tick-s18-${path.basename(baseDir)}`, log, logDir: path.join(options.logDir, "s18-stack") });
  const regions: Partial<Record<"a" | "b", Cluster>> = {};
  let sink: ChaosSink | null = null;
  const loads: CreateLoad[] = [];
  const violations: string[] = [];
  try {
    await stack.defineEtcd(["a", "b", "witness"]);
    await stack.startEtcd();
    const pgA = await stack.defineMember("pg-a", "a");
    const pgB = await stack.defineMember("pg-b", "b");
    stack.startMember(pgA);
    await stack.waitHealthy(["pg-a"]);
    stack.startMember(pgB);
    await stack.waitHealthy(["pg-a", "pg-b"]);
    await stack.startHaproxy("haproxy-a");
    await stack.startHaproxy("haproxy-b");
    await migrateDeploy(stack.databaseUrl("haproxy-b", "tick"));
    log("etcd in a, b and a witness site; Patroni primary pg-a (region a), synchronous standby pg-b (region b); an HAProxy per region; migrated");

    for (const region of ["a", "b"] as const) {
      const url = stack.databaseUrl(`haproxy-${region}`, "tick");
      regions[region] = await startCluster({
        schedulers: 2,
        workers: 1,
        log,
        logDir: options.logDir,
        database: { url, name: "tick", drop: async () => {} },
        env: { TICK_REGION: region, TICK_SHARD_REGIONS: SHARD_REGIONS, TICK_REDIS_PREFIX: `s18-${region}`, SCHEDULER_DISPATCH_RATE: String(DISPATCH_RATE) },
        namePrefix: `${region}-`,
      });
    }
    const a = regions.a!;
    const b = regions.b!;
    sink = await startChaosSink(random.next);
    await waitUntil(async () => {
      const rows = await leases(b.pool);
      return heldBy(rows, HOME_SHARDS.a, "a") && heldBy(rows, HOME_SHARDS.b, "b");
    }, 30_000, "each region's schedulers holding their home shards");
    log(`apps up in both regions (TICK_SHARD_REGIONS=${SHARD_REGIONS}); shards 0-3 held in a, 4-7 in b`);

    // Tenants at home in each region; clients reach region b's console (the region that stays).
    const tenants: Tenant[] = [];
    for (const [name, shards] of [["tenant-a", HOME_SHARDS.a], ["tenant-b", HOME_SHARDS.b]] as const) {
      tenants.push(await createTenant(b.pool, b.consoleUrl, name, { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 }, { fetch: fetchWithTimeout, id: tenantIdIn(shards) }));
    }
    const schedule = await tenants[0]!.client.call("createSchedule", {
      body: {
        name: "every two seconds",
        cron: "*/2 * * * * *",
        timezone: "UTC",
        misfirePolicy: "run_latest",
        job: { target: { url: sink.url("/ok/schedule-a") }, dependencyKey: "sink-ok", maxAttempts: 25, backoff: { strategy: "exponential", baseMs: 200, maxMs: 2_000, jitter: "full" } },
      },
    });
    if (!schedule.ok) throw new Error(`could not create the schedule: ${JSON.stringify(schedule.problem)}`);
    for (const tenant of tenants) loads.push(startCreateLoad({ tenant, sink, random, intervalMs: 200, maxOutstanding: 200 }));
    const phases: PhaseRun[] = [];
    const beginPhase = (name: string, faultMs: number | null) => {
      const last = phases.at(-1);
      if (last) last.endedAt = Date.now();
      const p: PhaseRun = { name, scenarios: "S18", faults: 0, startedAt: Date.now(), endedAt: Infinity, faultMs };
      phases.push(p);
      for (const l of loads) l.setPhase(name);
      return p;
    };
    beginPhase("warm-up", 0);
    await sleep(STEADY_MS);

    // --- region a is lost -------------------------------------------------------------------------------
    const lost = beginPhase("region a lost", null);
    const catchUpOps = await createDueSoon(tenants[0]!, sink, CATCH_UP_JOBS, lost.name);
    const before = await leases(b.pool);
    const regionA = [...a.members.values()].map((m) => m.proc.child).concat([a.consoleProcess().child, a.redisProcess().child]);
    const killedAt = Date.now();
    for (const child of regionA) child.kill("SIGSTOP");
    await Promise.all([stack.killMember(pgA), Promise.resolve(stack.killEtcdMember("etcd-a")), Promise.resolve(stack.killHaproxy("haproxy-a"))]);
    lost.faults++;
    lost.faultAt = killedAt;
    log("region a lost: pg-a (Patroni and postmaster), etcd-a and haproxy-a killed; a's console, schedulers, worker and Redis frozen");

    let takeoverAt: number | null = null;
    let takeover: Awaited<ReturnType<typeof leases>> = [];
    const rtoOf = () => {
      const gaps = loads.map((l) => measureGap(l, killedAt));
      return gaps.every((g) => g.rtoMs !== null) ? Math.max(...gaps.map((g) => g.rtoMs!)) : null;
    };
    for (const deadline = Date.now() + 90_000; (takeoverAt === null || rtoOf() === null) && Date.now() < deadline; await sleep(200)) {
      if (takeoverAt !== null) continue;
      const rows = await leases(b.pool).catch(() => null);
      if (rows && heldBy(rows, HOME_SHARDS.a, "b")) {
        takeoverAt = Date.now();
        takeover = rows;
      }
    }
    const rtoMs = rtoOf();
    const shardTakeoverMs = takeoverAt === null ? null : takeoverAt - killedAt;
    log(`creates acknowledged by region b again after ${rtoMs ?? "(never)"} ms (primary now ${(await stack.primary())?.name ?? "none"}); region a's shards held by region b after ${shardTakeoverMs ?? "(never)"} ms`);
    if (rtoMs === null) violations.push("creates never succeeded again in region b within 90 s");
    if (takeoverAt === null) violations.push("region b's schedulers never took region a's shards within 90 s");
    for (const s of HOME_SHARDS.a) {
      const was = before.find((r) => r.shard === s)!;
      const now = takeover.find((r) => r.shard === s);
      if (now && BigInt(now.epoch) <= BigInt(was.epoch)) violations.push(`shard ${s} taken over at epoch ${now.epoch}, not above ${was.epoch}`);
    }
    await sleep(STEADY_MS);
    lost.faultMs = Math.max(rtoMs ?? 0, shardTakeoverMs ?? 0);

    // --- region a returns -------------------------------------------------------------------------------
    beginPhase("region a returns", 0);
    stack.startEtcdMember("etcd-a");
    stack.startMember(pgA);
    await stack.waitHealthy(["pg-a", "pg-b"]);
    const rejoined = await isInRecovery(stack, pgA).catch(() => false);
    log(`pg-a started again: ${rejoined ? "it rejoined as a standby (pg_is_in_recovery), not writable" : "it is NOT a standby"}`);
    if (!rejoined) violations.push("region a's old primary came back writable");
    await stack.startHaproxy("haproxy-a");
    const staleBefore = (await leases(b.pool)).reduce((n, r) => n + Number(r.stale), 0);
    const returnedAt = Date.now();
    for (const child of regionA) child.kill("SIGCONT");
    log("region a's console, schedulers, worker and Redis resumed with what they held before");
    let handedBack: Awaited<ReturnType<typeof leases>> = [];
    let handBackMs: number | null = null;
    for (const deadline = Date.now() + 60_000; handBackMs === null && Date.now() < deadline; await sleep(200)) {
      const rows = await leases(b.pool).catch(() => null);
      if (rows && heldBy(rows, HOME_SHARDS.a, "a")) {
        handBackMs = Date.now() - returnedAt;
        handedBack = rows;
      }
    }
    log(`region b handed region a's shards back after ${handBackMs ?? "(never)"} ms`);
    if (handBackMs === null) violations.push("region a's schedulers never got their shards back within 60 s");
    for (const s of HOME_SHARDS.a) {
      const t = takeover.find((r) => r.shard === s);
      const h = handedBack.find((r) => r.shard === s);
      if (t && h && BigInt(h.epoch) <= BigInt(t.epoch)) violations.push(`shard ${s} handed back at epoch ${h.epoch}, not above ${t.epoch}`);
    }
    await sleep(STEADY_MS);

    for (const l of loads) await l.stop();
    // Paused as a careful client pauses: retried until acknowledged. Right after region a's return a request
    // can fail (a connection of its console to the old primary); unpaused, the schedule keeps one occurrence
    // live and the drain never ends (seen in CI: the drain's listing showed an occurrence due in 0.5 s).
    let paused = false;
    for (let attempt = 1, deadline = Date.now() + 30_000; !paused && Date.now() < deadline; attempt++) {
      const res = await tenants[0]!.client.call("pauseSchedule", { params: { id: schedule.body.id } }).catch((err: Error) => err);
      const failure = res instanceof Error ? res.message : res.ok ? null : `HTTP ${res.status} ${JSON.stringify(res.problem).slice(0, 200)}`;
      paused = failure === null;
      if (!paused) {
        log(`pausing the schedule, try ${attempt}: ${failure}; again in 500 ms`);
        await sleep(500);
      }
    }
    if (!paused) violations.push("the schedule could not be paused through the API within 30 s after region a's return");
    phases.at(-1)!.endedAt = Date.now();
    log("drain: load stopped, schedule paused, waiting for every job to finish");
    await drainJobs(b.pool, log);

    const ops = [...loads.flatMap((l) => l.ops), ...catchUpOps];
    const acked = ops.filter((o) => o.jobId);
    const missing = await missingJobs(b.pool, acked);
    if (missing.length > 0) violations.push(`${missing.length} acknowledged jobs lost with synchronous replication (RPO must be 0): ${missing.slice(0, 5).map((o) => o.key).join(", ")}`);
    const verdict = await checkFailoverLoad(b.pool, sink, ops, phases);
    violations.push(...verdict.violations);
    const tries = loads.flatMap((l) => l.tries);
    const outcomes = countOutcomes(tries);
    for (const bad of ["bad_503", "server_error", "timeout", "other"] as const) {
      if (outcomes[bad] > 0) violations.push(`${outcomes[bad]} creates answered ${bad}: ${tries.filter((t) => t.outcome === bad).slice(0, 3).map((t) => `${t.status ?? "-"} ${t.detail ?? ""}`).join("; ")}`);
    }
    for (const [name, c] of Object.entries(regions)) {
      for (const m of c.members.values()) if (!c.alive(m)) violations.push(`${m.name} exited during the run`);
      const ready = await fetch(`${c.consoleUrl}/readyz`).then((r) => r.status, () => 0);
      if (ready !== 200) violations.push(`region ${name}'s console answers /readyz ${ready} after the failover`);
    }
    const after = await leases(b.pool);
    const staleTotal = after.reduce((n, r) => n + Number(r.stale), 0);

    // Jobs of region a's shards due while it was down: released after the takeover, at the dispatch rate.
    const { rows: overdue } = await b.pool.query<{ n: number; first_ms: number | null; spread_ms: number | null }>(
      `SELECT count(*)::int AS n,
              (extract(epoch FROM min(a.dispatched_at)) * 1000 - $2)::float8 AS first_ms,
              (extract(epoch FROM max(a.dispatched_at) - min(a.dispatched_at)) * 1000)::float8 AS spread_ms
         FROM history.jobs_all j JOIN history.attempts_all a ON a.job_id = j.id AND a.number = 1
        WHERE j.shard = ANY($1::int[]) AND j.due_at >= to_timestamp($2 / 1000.0) AND j.due_at < to_timestamp($3 / 1000.0)`,
      [HOME_SHARDS.a, killedAt, takeoverAt ?? Date.now()],
    );
    const { rows: release } = await b.pool.query<{ n: number; spread_ms: number | null }>(
      `SELECT count(*)::int AS n, (extract(epoch FROM max(a.dispatched_at) - min(a.dispatched_at)) * 1000)::float8 AS spread_ms
         FROM history.attempts_all a WHERE a.number = 1 AND a.job_id = ANY($1::uuid[])`,
      [catchUpOps.flatMap((o) => (o.jobId ? [o.jobId] : []))],
    );
    const releaseMs = release[0]!.spread_ms === null ? null : Math.round(release[0]!.spread_ms);
    const perSecond = releaseMs ? Math.round((release[0]!.n - 1) / (releaseMs / 1000)) : null;
    // The limiter may release one second's worth at once; past that the pace must hold.
    if (release[0]!.n > 2 * DISPATCH_RATE && perSecond !== null && perSecond > DISPATCH_RATE * 1.25) {
      violations.push(`the catch-up was released at ${perSecond} jobs/s, above SCHEDULER_DISPATCH_RATE ${DISPATCH_RATE}`);
    }
    const gap = measureGap({ ops, tries } as unknown as CreateLoad, killedAt);
    const row = verdict.rows.find((r) => r.phase === "region a lost")!;
    const { lost: _l, ...totals } = verdict.totals;
    return {
      scenario: "S18",
      timings: TEST_TIMINGS,
      rtoMs,
      shardTakeoverMs,
      during: gap.during,
      acknowledged: acked.length,
      rpoJobs: missing.length,
      rpoKeys: missing.map((o) => o.key),
      catchUp: { jobs: release[0]!.n, releaseMs, perSecond, dispatchRate: DISPATCH_RATE },
      overdueReleased: { jobs: overdue[0]!.n, firstAfterLossMs: overdue[0]!.first_ms === null ? null : Math.round(overdue[0]!.first_ms), spreadMs: overdue[0]!.spread_ms === null ? null : Math.round(overdue[0]!.spread_ms) },
      epochs: HOME_SHARDS.a.map((s) => ({
        shard: s,
        before: before.find((r) => r.shard === s)!.epoch,
        takeover: takeover.find((r) => r.shard === s)?.epoch ?? null,
        handedBack: handedBack.find((r) => r.shard === s)?.epoch ?? null,
      })),
      staleWritesRefused: { total: staleTotal, afterReturn: staleTotal - staleBefore },
      oldPrimaryRejoinedAsStandby: rejoined,
      handBackMs,
      duplicateEffects: verdict.totals.duplicateEffects,
      rawDuplicateDeliveries: verdict.totals.rawDuplicateDeliveries,
      maxStartLagMs: row.maxStartLagMs,
      startLagBoundMs: row.startLagBoundMs,
      outcomes,
      facts: { ...verdict.facts, ...totals },
      violations,
    };
  } finally {
    for (const l of loads) await l.stop().catch(() => {});
    for (const c of Object.values(regions)) {
      // A frozen process cannot stop: thaw whatever is still stopped first.
      for (const child of [...c.members.values()].map((m) => m.proc.child).concat([c.consoleProcess().child, c.redisProcess().child])) child.kill("SIGCONT");
      await c.stop().catch((err: unknown) => log(`stopping a region's apps failed: ${String(err)}`));
    }
    await sink?.close();
    await stack.stop().catch((err: unknown) => log(`stopping the HA stack failed: ${String(err)}`));
  }
}

/**
 * `n` jobs of `tenant` in one batch (each with its Idempotency-Key), due 2-4 s from now: while region a is
 * down. Retried until the batch is acknowledged.
 */
async function createDueSoon(tenant: Tenant, sink: ChaosSink, n: number, phase: string): Promise<Op[]> {
  const ops: Op[] = Array.from({ length: n }, (_, i) => ({
    key: `${tenant.name}-catch-up-${i}`,
    tenant: tenant.name,
    kind: "delayed",
    phase,
    createdAt: Date.now(),
    jobId: null,
    createRetries: 0,
    cancel: null,
    delayMs: 2_000 + Math.round((2_000 * i) / n),
  }));
  const jobs = ops.map((op) => ({
    target: { url: sink.url(`/ok/${op.key}`), timeoutMs: 10_000 },
    dependencyKey: "sink-ok",
    maxAttempts: 25,
    backoff: { strategy: "exponential" as const, baseMs: 200, maxMs: 2_000, jitter: "full" as const },
    delayMs: op.delayMs,
    idempotencyKey: op.key,
  }));
  for (let tries = 0; tries < 20; tries++) {
    const res = await tenant.client.call("createJobsBatch", { body: { jobs } }).catch(() => null);
    if (res?.ok) {
      (res.body as { results: { job?: { id: string } }[] }).results.forEach((r, i) => {
        if (r.job) {
          ops[i]!.jobId = r.job.id;
          ops[i]!.ackedAt = Date.now();
        }
      });
      return ops;
    }
    await sleep(500);
  }
  throw new Error("the catch-up batch was never acknowledged");
}

async function waitUntil(probe: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}
