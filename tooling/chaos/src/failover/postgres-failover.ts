import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { migrateDeploy } from "@tick/db/migrate";
import { checkInvariants, type PhaseRun } from "../checker.js";
import { LEASE_TTL_MS, startCluster, type Cluster } from "../cluster.js";
import type { Random } from "../random.js";
import { startChaosSink, type ChaosSink } from "../sink.js";
import { createTenant, type Op } from "../workload.js";
import { countOutcomes, fetchWithTimeout, measureGap, startCreateLoad, type CreateLoad, type TryOutcome } from "./create-load.js";
import { createHaStack, TEST_TIMINGS, type HaStack, type PatroniMember } from "./ha-stack.js";

/** Same slack as the chaos suite's start-lag bound (fault + 2 lease TTLs + slack). */
const START_LAG_SLACK_MS = 4_000;
const STEADY_MS = 6_000;

type Replication = "synchronous" | "asynchronous";

/**
 * What dies. machine: Patroni and the postmaster together (the primary's host is lost): Patroni's leader
 * lock lapses after its TTL and the standby is promoted. postmaster: SIGKILL of the postmaster alone:
 * Patroni, still holding the lock, restarts it in place (crash recovery), no failover.
 */
type KillKind = "machine" | "postmaster";

export interface FailoverRun {
  name: string;
  replication: Replication;
  kill: KillKind;
  killed: string;
  /** The primary once creates succeed again (the killed member itself after a postmaster kill). */
  primaryAfter: string | null;
  /** How far the standby's flushed WAL was behind the primary's, sampled every 250 ms under load before the kill (bytes). */
  standbyFlushLagBytes: { max: number | null; atKill: number | null };
  /** The standby's stream was stalled this long before the kill (its WAL senders stopped); null: not stalled. */
  streamStalledMs: number | null;
  /** Creates acknowledged while the stream was stalled: what asynchronous replication can lose. */
  acknowledgedWhileStalled: number | null;
  rtoMs: number | null;
  during: Record<TryOutcome, number>;
  acknowledgedAfterRetry: number;
  slowestRefusalMs: number | null;
  acknowledged: number;
  /** Acknowledged creates of this run whose job is not in the database after the failover. */
  rpoJobs: number;
  rpoKeys: string[];
  /** Of the lost jobs, those whose effect had already happened at the sink (the database no longer knows them). */
  lostJobsAlreadyRun: number;
  /** Jobs whose attempt row was lost with the primary (asynchronous) and that ran again under a new attempt, same key. */
  rerunAfterLostAttempt: number;
  duplicateEffects: number;
  rawDuplicateDeliveries: number;
  maxStartLagMs: number | null;
  startLagBoundMs: number | null;
  /** After a machine loss the killed member is started again: it must come back as a standby (read-only). null: not a machine loss. */
  oldPrimaryRejoinedAsStandby: boolean | null;
}

/** How long the stalled runs keep the standby from receiving WAL before the primary dies. */
const STALL_MS = 2_000;

const RUNS: { replication: Replication; kill: KillKind; stallMs?: number }[] = [
  { replication: "synchronous", kill: "postmaster" },
  { replication: "synchronous", kill: "machine" },
  // The standby behind when the primary dies, as over a slow or stalled link: synchronous replication makes
  // the commits wait (and answers outcome-unknown when the primary dies under them), asynchronous
  // acknowledges them and loses them.
  { replication: "synchronous", kill: "machine", stallMs: STALL_MS },
  { replication: "asynchronous", kill: "machine" },
  { replication: "asynchronous", kill: "machine", stallMs: STALL_MS },
];

export interface PostgresFailoverReport {
  scenario: "S3";
  timings: typeof TEST_TIMINGS;
  runs: FailoverRun[];
  outcomes: Record<TryOutcome, number>;
  facts: Record<string, number>;
  violations: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One connection for `fn`, closed after it (a lost connection's error event is ignored: the query in flight fails). */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  c.on("error", () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/** How far the standby's flushed WAL is behind the primary's, read on the primary (null: no standby connected). */
async function standbyFlushLag(stack: HaStack, primary: PatroniMember): Promise<number | null> {
  return withClient(stack.memberUrl(primary, "postgres"), async (c) => {
    const { rows } = await c.query<{ lag: string | null }>(`SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn))::text AS lag FROM pg_stat_replication`);
    return rows[0]?.lag == null ? null : Number(rows[0].lag);
  }).catch(() => null);
}

export async function isInRecovery(stack: HaStack, m: PatroniMember): Promise<boolean> {
  return withClient(stack.memberUrl(m, "postgres"), async (c) => (await c.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r")).rows[0]!.r);
}

/**
 * S3 with a real HA stack: Patroni (etcd) runs a primary and a standby, HAProxy sends the product to the
 * primary. Under a steady load of API creates and running jobs the primary's machine dies (SIGKILL of Patroni
 * and the postmaster); Patroni promotes the standby; the killed member is started again and must come back
 * as a standby. Once with synchronous replication (RPO must be 0), once with asynchronous (RPO measured).
 */
export async function runPostgresFailover(options: { log: (line: string) => void; logDir: string; random: Random }): Promise<PostgresFailoverReport> {
  const { log, random } = options;
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-ha-"));
  const stack = await createHaStack({ baseDir, scope: `tick-s3-${path.basename(baseDir)}`, log, logDir: path.join(options.logDir, "stack") });
  let cluster: Cluster | null = null;
  let sink: ChaosSink | null = null;
  let load: CreateLoad | null = null;
  const violations: string[] = [];
  try {
    await stack.defineEtcd(["local"]);
    await stack.startEtcd();
    const members = [await stack.defineMember("pg-1", "local"), await stack.defineMember("pg-2", "local")];
    stack.startMember(members[0]!);
    await stack.waitHealthy(["pg-1"]);
    stack.startMember(members[1]!);
    await stack.waitHealthy(["pg-1", "pg-2"]);
    await stack.startHaproxy("haproxy");
    log(`Patroni cluster up (pg-1 primary, pg-2 synchronous standby), HAProxy on ${stack.databaseUrl("haproxy", "tick")}`);
    const databaseUrl = stack.databaseUrl("haproxy", "tick");
    await migrateDeploy(databaseUrl);
    log("migrated through HAProxy");

    cluster = await startCluster({ schedulers: 2, workers: 2, log, logDir: options.logDir, database: { url: databaseUrl, name: "tick", drop: async () => {} } });
    sink = await startChaosSink(random.next);
    const tenant = await createTenant(cluster.pool, cluster.consoleUrl, "failover", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 }, { fetch: fetchWithTimeout });
    load = startCreateLoad({ tenant, sink, random, intervalMs: 100, maxOutstanding: 400 });
    const phases: PhaseRun[] = [];
    const beginPhase = (name: string, faultMs: number | null) => {
      const p: PhaseRun = { name, scenarios: "S3", faults: 0, startedAt: Date.now(), endedAt: Infinity, faultMs };
      phases.push(p);
      load!.setPhase(name);
      return p;
    };
    let phase = beginPhase("warm-up", 0);
    await sleep(STEADY_MS);
    const runs: (Omit<FailoverRun, "acknowledged" | "rpoJobs" | "rpoKeys" | "lostJobsAlreadyRun" | "rerunAfterLostAttempt" | "duplicateEffects" | "rawDuplicateDeliveries" | "maxStartLagMs" | "startLagBoundMs"> & { phases: string[] })[] = [];

    for (const { replication, kill, stallMs } of RUNS) {
      if (replication === "asynchronous" && stack.synchronousMode) {
        await stack.setSynchronousMode(false);
        await waitSetting(stack, (await stack.primary())!, "synchronous_standby_names", "");
        log("replication switched to asynchronous (synchronous_mode: false; synchronous_standby_names is empty)");
      }
      const name = `${replication}, ${kill === "machine" ? "primary's machine lost" : "primary's postmaster SIGKILL"}${stallMs ? `, standby stalled ${stallMs / 1000} s` : ""}`;
      phase.endedAt = Date.now();
      phase = beginPhase(name, null);
      const victim = await stack.primary();
      if (!victim) throw new Error("no primary before the kill");
      // Under load, how far behind the standby runs: what asynchronous replication may lose.
      const lags: number[] = [];
      for (const until = Date.now() + STEADY_MS; Date.now() < until; await sleep(250)) {
        const l = await standbyFlushLag(stack, victim);
        if (l !== null) lags.push(l);
      }
      let stalledAt: number | null = null;
      if (stallMs) {
        stalledAt = Date.now();
        const pids = await stack.stallReplication(victim);
        log(`${name}: WAL senders ${pids.join(", ")} stopped: the standby receives nothing more`);
        await sleep(stallMs);
      }
      const atKill = await standbyFlushLag(stack, victim);
      const killedAt = Date.now();
      if (kill === "machine") await stack.killMember(victim);
      else await stack.killPostmaster(victim);
      phase.faults++;
      phase.faultAt = killedAt;
      log(`${name}: SIGKILL ${kill === "machine" ? `${victim.name}'s Patroni and postmaster` : `${victim.name}'s postmaster`} (standby ${atKill ?? "?"} bytes behind at the last sample, at most ${lags.length ? Math.max(...lags) : "?"} under load)`);
      let gap = measureGap(load, killedAt);
      for (const deadline = Date.now() + 90_000; gap.rtoMs === null && Date.now() < deadline; gap = measureGap(load, killedAt)) await sleep(100);
      const primaryAfter = await stack.primary();
      log(`${name}: creates acknowledged again after ${gap.rtoMs ?? "(never)"} ms; primary now ${primaryAfter?.name ?? "none"}; answers during the gap: ${JSON.stringify(gap.during)}`);
      if (gap.rtoMs === null) violations.push(`${name}: creates never succeeded again within 90 s of the kill`);
      await sleep(STEADY_MS);
      gap = measureGap(load, killedAt); // the same figures, with the retries acknowledged since
      phase.faultMs = gap.rtoMs;
      const phaseNames = [phase.name];

      let rejoined: boolean | null = null;
      if (kill === "machine") {
        phase.endedAt = Date.now();
        phase = beginPhase(`${name}: old primary rejoins`, 0);
        phaseNames.push(phase.name);
        stack.startMember(victim);
        await stack.waitHealthy(members.map((m) => m.name));
        rejoined = await isInRecovery(stack, victim).catch(() => false);
        log(`${name}: ${victim.name} started again: ${rejoined ? "it rejoined as a standby (pg_is_in_recovery), not writable" : "it is NOT a standby"}`);
        if (!rejoined) violations.push(`${name}: the old primary ${victim.name} came back writable`);
      } else {
        await stack.waitHealthy(members.map((m) => m.name));
      }
      runs.push({
        name,
        replication,
        kill,
        killed: victim.name,
        primaryAfter: primaryAfter?.name ?? null,
        standbyFlushLagBytes: { max: lags.length ? Math.max(...lags) : null, atKill },
        streamStalledMs: stallMs ?? null,
        acknowledgedWhileStalled: stalledAt === null ? null : load.tries.filter((t) => t.outcome === "acknowledged" && t.doneAt >= stalledAt && t.doneAt < killedAt).length,
        rtoMs: gap.rtoMs,
        during: gap.during,
        acknowledgedAfterRetry: gap.acknowledgedAfterRetry,
        slowestRefusalMs: gap.slowestRefusalMs,
        oldPrimaryRejoinedAsStandby: rejoined,
        phases: phaseNames,
      });
    }
    await sleep(STEADY_MS / 2);
    await load.stop();
    phase.endedAt = Date.now();

    log("drain: load stopped, waiting for every job to finish");
    await drainJobs(cluster.pool, log);

    // RPO: acknowledged creates whose job is gone after the failover.
    const acked = load.ops.filter((o) => o.jobId);
    const missing = await missingJobs(cluster.pool, acked);

    const verdict = await checkFailoverLoad(cluster.pool, sink, load.ops, phases);
    // Acknowledged jobs lost with asynchronous replication are its measured RPO, reported as such; with
    // synchronous replication they are a failure. Every other invariant holds in both modes.
    const asyncPhases = new Set(runs.filter((r) => r.replication === "asynchronous").flatMap((r) => r.phases));
    const asyncLost = new Set(missing.filter((o) => asyncPhases.has(o.phase)).map((o) => o.key));
    // Asynchronous loss also loses attempt rows: a job dispatched and run while its attempt's row existed on
    // the old primary only is run again under a new attempt after the failover. Its earlier delivery names an
    // attempt the database no longer knows, which the checker counts as a second job's effect; it is the same
    // job (one job for the key) and the same key, so the sink applied the effect once. Counted, not failed,
    // after asynchronous runs only: with synchronous replication no attempt row may be lost.
    const lostAttemptKeys = await keysWithOnlyLostAttempts(cluster.pool, sink, load.ops.filter((o) => asyncPhases.has(o.phase)));
    const excused = (v: string) => {
      const key = v.split(":")[0]!.split(" ")[0]!;
      return (asyncLost.has(key) && v.endsWith("acknowledged but not in the database")) || (lostAttemptKeys.has(key) && / effects from \d+ different jobs$/.test(v));
    };
    violations.push(...verdict.violations.filter((v) => !excused(v)));

    const outcomes = countOutcomes(load.tries);
    for (const bad of ["bad_503", "server_error", "timeout", "other"] as const) {
      if (outcomes[bad] > 0) {
        const examples = load.tries.filter((t) => t.outcome === bad).slice(0, 3).map((t) => `${t.status ?? "-"} ${t.detail ?? ""}`);
        violations.push(`${outcomes[bad]} creates answered ${bad} (must be 201/200 or a 503 problem+json with Retry-After): ${examples.join("; ")}`);
      }
    }
    // Every process survived both switches (none crashed on a lost connection) and the console is ready.
    for (const m of cluster.members.values()) if (!cluster.alive(m)) violations.push(`${m.name} exited during the run`);
    const ready = await fetch(`${cluster.consoleUrl}/readyz`).then((r) => r.status, () => 0);
    if (ready !== 200) violations.push(`the console's /readyz answers ${ready} after the failovers`);

    const report: FailoverRun[] = runs.map((r) => {
      const row = verdict.rows.find((x) => x.phase === r.phases[0])!;
      const lost = missing.filter((o) => r.phases.includes(o.phase));
      const rerun = load!.ops.filter((o) => r.phases.includes(o.phase) && lostAttemptKeys.has(o.key)).length;
      const { phases: _p, ...rest } = r;
      return {
        ...rest,
        acknowledged: acked.filter((o) => r.phases.includes(o.phase)).length,
        rpoJobs: lost.length,
        rpoKeys: lost.map((o) => o.key),
        lostJobsAlreadyRun: lost.filter((o) => sink!.deliveries.some((d) => d.key === o.key && d.status === 200)).length,
        rerunAfterLostAttempt: rerun,
        duplicateEffects: row.duplicateEffects - rerun,
        rawDuplicateDeliveries: row.rawDuplicateDeliveries,
        maxStartLagMs: row.maxStartLagMs,
        startLagBoundMs: row.startLagBoundMs,
      };
    });
    for (const r of report) if (r.replication === "synchronous" && r.rpoJobs > 0) violations.push(`synchronous replication lost ${r.rpoJobs} acknowledged jobs (RPO must be 0): ${r.rpoKeys.slice(0, 5).join(", ")}`);
    const { lost: _l, ...totals } = verdict.totals;
    return {
      scenario: "S3",
      timings: TEST_TIMINGS,
      runs: report,
      outcomes,
      facts: { ...verdict.facts, ...totals, duplicateEffects: totals.duplicateEffects - lostAttemptKeys.size, rerunAfterLostAttempt: lostAttemptKeys.size },
      violations,
    };
  } finally {
    await load?.stop().catch(() => {});
    await cluster?.stop().catch((err: unknown) => log(`stopping the apps failed: ${String(err)}`));
    await sink?.close();
    await stack.stop().catch((err: unknown) => log(`stopping the HA stack failed: ${String(err)}`));
  }
}

/** The chaos checker over a failover test's create load: no quiet tenant, no held dependency, the cluster's leases. */
export function checkFailoverLoad(pool: pg.Pool, sink: ChaosSink, ops: Op[], phases: PhaseRun[]) {
  return checkInvariants({ pool, sink, ops, phases, quietLagBoundMs: Infinity, leaseTtlMs: LEASE_TTL_MS, startLagSlackMs: START_LAG_SLACK_MS, heldDependencies: [] });
}

/** Longer than a recurrence round's lookahead plus its interval (1 s + 250 ms in the chaos cluster, 2 s + 500 ms by default): see drainJobs. */
const DRAIN_QUIET_MS = 3_000;

/** Waits (up to 2 minutes) until no job has been live and the outbox has been published for DRAIN_QUIET_MS in a row. */
export async function drainJobs(pool: pg.Pool, log: (line: string) => void) {
  const deadline = Date.now() + 120_000;
  // Drained means nothing live for a while, not at one instant: a recurrence round that began before its
  // schedule was paused can still commit an occurrence (due within the lookahead) after a check saw none.
  let emptySince: number | null = null;
  for (;;) {
    const { rows } = await pool.query<{ live: string; outbox: string }>(
      `SELECT (SELECT count(*) FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running')) AS live, (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS outbox`,
    );
    const empty = Number(rows[0]!.live) === 0 && Number(rows[0]!.outbox) === 0;
    emptySince = empty ? (emptySince ?? Date.now()) : null;
    if (emptySince !== null && Date.now() - emptySince >= DRAIN_QUIET_MS) break;
    if (Date.now() > deadline) {
      log(`drain timed out: ${rows[0]!.live} live jobs, ${rows[0]!.outbox} unpublished outbox rows`);
      for (const line of await describeLiveJobs(pool)) log(`  ${line}`);
      break;
    }
    await sleep(500);
  }
  await sleep(1_000); // completion webhooks of the last jobs
}

/** What keeps jobs live (up to 10): each one's state, due time, dependency and attempts, for a drain that timed out. */
async function describeLiveJobs(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ line: string }>(
    `SELECT format('job %s (shard %s, %s, version %s, due %s ms from now, dependency %s, schedule %s): attempts %s',
                   j.id, j.shard, j.status, j.version, round(extract(epoch FROM j.due_at - now()) * 1000), coalesce(j.dependency_key, '-'), coalesce(j.schedule_id::text, '-'),
                   coalesce((SELECT string_agg(format('#%s %s%s, dispatched %s ms ago%s', a.number, a.status, coalesce(' (' || a.outcome || ')', ''),
                                                      round(extract(epoch FROM now() - a.dispatched_at) * 1000),
                                                      coalesce(', lease ends in ' || round(extract(epoch FROM a.lease_expires_at - now()) * 1000) || ' ms', '')), '; ' ORDER BY a.number)
                               FROM attempts a WHERE a.job_id = j.id), 'none')) AS line
       FROM jobs j WHERE j.status IN ('scheduled', 'dispatched', 'running') ORDER BY j.due_at LIMIT 10`,
  );
  return rows.map((r) => r.line);
}

/**
 * Keys whose successful deliveries came from one job the database knows plus attempts it does not know at all
 * (their rows were lost with an asynchronous primary): one job, one key, one effect at the sink.
 */
async function keysWithOnlyLostAttempts(pool: pg.Pool, sink: ChaosSink, ops: Op[]): Promise<Set<string>> {
  const keys = new Set(ops.filter((o) => o.jobId).map((o) => o.key));
  const delivered = sink.deliveries.filter((d) => d.status === 200 && keys.has(d.key));
  const { rows } = await pool.query<{ id: string; job_id: string }>(`SELECT id, job_id FROM history.attempts_all WHERE id = ANY($1::uuid[])`, [
    [...new Set(delivered.map((d) => d.attemptId))],
  ]);
  const jobOf = new Map(rows.map((r) => [r.id, r.job_id]));
  const result = new Set<string>();
  for (const key of new Set(delivered.map((d) => d.key))) {
    const forKey = delivered.filter((d) => d.key === key);
    const knownJobs = new Set(forKey.flatMap((d) => (jobOf.has(d.attemptId) ? [jobOf.get(d.attemptId)!] : [])));
    if (knownJobs.size === 1 && forKey.some((d) => !jobOf.has(d.attemptId))) result.add(key);
  }
  return result;
}

/** Acknowledged creates whose job is not in the database (RPO). */
export async function missingJobs(pool: pg.Pool, acked: Op[]): Promise<Op[]> {
  const { rows } = await pool.query<{ id: string }>(`SELECT id FROM history.jobs_all WHERE id = ANY($1::uuid[])`, [acked.map((o) => o.jobId)]);
  const present = new Set(rows.map((r) => r.id));
  return acked.filter((o) => !present.has(o.jobId!));
}

async function waitSetting(stack: HaStack, m: PatroniMember, name: string, value: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = await withClient(stack.memberUrl(m, "postgres"), async (c) => (await c.query<{ v: string }>(`SELECT current_setting($1) AS v`, [name])).rows[0]!.v).catch(() => null);
    if (current === value) return;
    if (Date.now() > deadline) throw new Error(`${name} on ${m.name} is ${current}, not ${JSON.stringify(value)}, after 30 s`);
    await sleep(250);
  }
}
