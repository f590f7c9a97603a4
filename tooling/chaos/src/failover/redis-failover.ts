import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort, startProcess, waitFor, type RunningProcess } from "@tick/testing";
import type { PhaseRun } from "../checker.js";
import { startCluster, type Cluster } from "../cluster.js";
import type { Random } from "../random.js";
import { startChaosSink, type ChaosSink } from "../sink.js";
import { createTenant } from "../workload.js";
import { countOutcomes, fetchWithTimeout, measureGap, startCreateLoad, type CreateLoad, type GapFigures } from "./create-load.js";
import { checkFailoverLoad, drainJobs, missingJobs } from "./postgres-failover.js";

/** What the sentinels monitor the primary as. */
const MASTER = "tick";
/** Sentinel timings of the test (production: docs/failover.md): down after 1 s, a failover may take 5 s. */
const SENTINEL_TIMINGS = { downAfterMs: 1_000, failoverTimeoutMs: 5_000, quorum: 2 };
const STEADY_MS = 6_000;
/** How long the apps get to start jobs again after the kill before the run counts it as never. */
const RECOVERY_DEADLINE_MS = 45_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** redis-server and redis-sentinel from Debian's packages; a missing one fails the test by name. */
function findRedisBinaries(): { server: string; sentinel: string } {
  const which = (bin: string, pkg: string) => {
    try {
      return execFileSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" }).trim();
    } catch {
      throw new Error(`${bin} not found: apt-get install ${pkg}`);
    }
  };
  return { server: which("redis-server", "redis-server"), sentinel: which("redis-sentinel", "redis-sentinel") };
}

export interface RedisFailoverReport {
  scenario: "Redis primary lost";
  /** Whether the apps were given the sentinels (false: REDIS_URL straight at the primary, the mechanism off). */
  sentinel: boolean;
  timings: typeof SENTINEL_TIMINGS;
  killed: string;
  promoted: string | null;
  /** ms from the SIGKILL until the sentinels named the replica the primary. */
  promotionMs: number | null;
  /** ms from the SIGKILL until the first job created after it ran at the sink (jobs start again). */
  rtoMs: number | null;
  /** Creates as the API's clients saw them around the kill (creates go to Postgres; Redis is not on their path). */
  creates: GapFigures;
  acknowledged: number;
  /** Acknowledged jobs not in the database, or in it but never run to an end (lost). */
  lost: number;
  duplicateEffects: number;
  rawDuplicateDeliveries: number;
  maxStartLagMs: number | null;
  /** ms from the old primary's restart until it was a replica of the new one; null: it never was (or was not restarted). */
  oldPrimaryRejoinMs: number | null;
  /** Connections of the apps seen on the old primary between its restart and its demotion: writes that would be lost. */
  appConnectionsOnOldPrimary: number;
  /** Jobs created after the old primary rejoined that ran: the apps kept working through its return. */
  ranAfterRejoin: number;
  facts: Record<string, number>;
  violations: string[];
}

interface Node {
  name: string;
  port: number;
  conf: string;
  proc: RunningProcess | null;
}

/**
 * A Redis primary, its replica and three sentinels on loopback, each with a config file of its own (the
 * sentinels rewrite theirs, and the nodes' are rewritten when the sentinels reconfigure them), AOF on as a
 * production node has it.
 */
async function startRedisStack(baseDir: string, bins: { server: string; sentinel: string }, log: (line: string) => void) {
  const node = async (name: string, replicaOf?: number): Promise<Node> => {
    const port = await freePort();
    const dir = path.join(baseDir, name);
    fs.mkdirSync(dir, { recursive: true });
    const conf = path.join(dir, "redis.conf");
    fs.writeFileSync(
      conf,
      [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, "appendonly yes", "appendfsync everysec", 'save ""', ...(replicaOf ? [`replicaof 127.0.0.1 ${replicaOf}`] : [])].join("\n") + "\n",
    );
    return { name, port, conf, proc: null };
  };
  const start = async (n: Node, bin: string, args: string[] = []) => {
    n.proc = startProcess(bin, [n.conf, ...args]);
    const probe = new Redis({ port: n.port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on("error", () => {});
    try {
      await waitFor(async () => (await probe.connect().then(() => probe.ping(), () => null).finally(() => probe.disconnect())) === "PONG", {
        timeoutMs: 10_000,
        description: `${n.name} on ${n.port} (${n.proc.output().slice(-300)})`,
      });
    } finally {
      probe.disconnect();
    }
  };
  const primary = await node("redis-1");
  const replica = await node("redis-2", primary.port);
  await start(primary, bins.server);
  await start(replica, bins.server);
  const admin = (port: number) => {
    const c = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, connectionName: "failover-probe", retryStrategy: () => 200 });
    c.on("error", () => {});
    return c;
  };
  const p = admin(primary.port);
  await waitFor(async () => /slave0:.*state=online/.test(await p.info("replication")), { timeoutMs: 15_000, description: "the replica in sync with the primary" });
  p.disconnect();

  const sentinels: Node[] = [];
  for (let i = 1; i <= 3; i++) {
    const port = await freePort();
    const dir = path.join(baseDir, `sentinel-${i}`);
    fs.mkdirSync(dir, { recursive: true });
    const conf = path.join(dir, "sentinel.conf");
    fs.writeFileSync(
      conf,
      [
        `port ${port}`,
        "bind 127.0.0.1",
        `dir ${dir}`,
        `sentinel monitor ${MASTER} 127.0.0.1 ${primary.port} ${SENTINEL_TIMINGS.quorum}`,
        `sentinel down-after-milliseconds ${MASTER} ${SENTINEL_TIMINGS.downAfterMs}`,
        `sentinel failover-timeout ${MASTER} ${SENTINEL_TIMINGS.failoverTimeoutMs}`,
        `sentinel parallel-syncs ${MASTER} 1`,
      ].join("\n") + "\n",
    );
    const s: Node = { name: `sentinel-${i}`, port, conf, proc: null };
    await start(s, bins.sentinel);
    sentinels.push(s);
  }
  // Every sentinel knows the replica and the two other sentinels (they find each other over the primary's hello channel).
  for (const s of sentinels) {
    const c = admin(s.port);
    await waitFor(
      async () => {
        const fields = (await c.call("SENTINEL", "MASTER", MASTER)) as string[];
        const f = new Map<string, string>();
        for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
        return f.get("num-slaves") === "1" && f.get("num-other-sentinels") === "2";
      },
      { timeoutMs: 30_000, description: `${s.name} seeing the replica and the other sentinels` },
    );
    c.disconnect();
  }
  log(`Redis up: primary ${primary.name} :${primary.port}, replica ${replica.name} :${replica.port}, sentinels :${sentinels.map((s) => s.port).join(", :")} (master name ${MASTER})`);

  return {
    primary,
    replica,
    sentinels,
    admin,
    nodes: [primary, replica],
    /** Where the sentinels say the primary is (port), asked of the first that answers. */
    async masterPort(): Promise<number | null> {
      for (const s of sentinels) {
        const c = admin(s.port);
        try {
          const addr = (await c.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER)) as [string, string] | null;
          if (addr) return Number(addr[1]);
        } catch {
          // the next one
        } finally {
          c.disconnect();
        }
      }
      return null;
    },
    kill(n: Node) {
      n.proc?.child.kill("SIGKILL");
    },
    restart: (n: Node) => start(n, bins.server),
    async stop() {
      for (const n of [...sentinels, primary, replica]) await n.proc?.stop(2_000);
    },
  };
}

/**
 * Redis' primary lost under load, with Sentinel: a primary, a replica and three sentinels; the apps are given
 * the sentinels (REDIS_SENTINELS). Under a steady load of API creates the primary is SIGKILLed; the sentinels
 * promote the replica; the apps must find it by themselves and jobs start again (RTO). Then the old primary is
 * started again from its own data: the sentinels must make it a replica of the new primary, and no app may
 * talk to it in between. At the end every acknowledged job ran, its effect once.
 *
 * sentinel false is the same run with the mechanism off (REDIS_URL straight at the primary): the apps stay
 * down after the kill, and the run fails.
 */
export async function runRedisFailover(options: { log: (line: string) => void; logDir: string; random: Random; sentinel?: boolean }): Promise<RedisFailoverReport> {
  const { log, random } = options;
  const useSentinel = options.sentinel ?? true;
  const bins = findRedisBinaries();
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-redis-ha-"));
  const stack = await startRedisStack(baseDir, bins, log);
  let cluster: Cluster | null = null;
  let sink: ChaosSink | null = null;
  let load: CreateLoad | null = null;
  const violations: string[] = [];
  try {
    const sentinelEnv: Record<string, string> = useSentinel ? { REDIS_SENTINELS: stack.sentinels.map((s) => `127.0.0.1:${s.port}`).join(","), REDIS_SENTINEL_MASTER: MASTER } : {};
    cluster = await startCluster({
      schedulers: 2,
      workers: 2,
      log,
      logDir: options.logDir,
      // With sentinels, only the URL's scheme, user, password and database apply; without, it is the primary itself.
      redisUrl: `redis://127.0.0.1:${stack.primary.port}`,
      env: sentinelEnv,
      namePrefix: "redis-",
    });
    log(useSentinel ? `apps started with REDIS_SENTINELS=${sentinelEnv.REDIS_SENTINELS}` : `apps started with REDIS_URL at the primary and no sentinels (the mechanism off)`);
    sink = await startChaosSink(random.next);
    const tenant = await createTenant(cluster.pool, cluster.consoleUrl, "redis-failover", { admissionRate: 1_000, admissionBurst: 1_000, maxInFlight: 200 }, { fetch: fetchWithTimeout });
    load = startCreateLoad({ tenant, sink, random, intervalMs: 100, maxOutstanding: 400 });
    const phases: PhaseRun[] = [];
    const beginPhase = (name: string, faultMs: number | null) => {
      if (phases.length) phases[phases.length - 1]!.endedAt = Date.now();
      const p: PhaseRun = { name, scenarios: "Redis", faults: 0, startedAt: Date.now(), endedAt: Infinity, faultMs };
      phases.push(p);
      load!.setPhase(name);
      return p;
    };
    beginPhase("warm-up", 0);
    await sleep(STEADY_MS);

    // The kill.
    const phase = beginPhase("primary lost", null);
    const killedAt = Date.now();
    stack.kill(stack.primary);
    phase.faults++;
    phase.faultAt = killedAt;
    log(`SIGKILL ${stack.primary.name} (the primary, :${stack.primary.port})`);
    let promotionMs: number | null = null;
    let rtoMs: number | null = null;
    const firstRunAfter = (since: number) => {
      const createdAfter = new Map(load!.ops.filter((o) => o.createdAt > since).map((o) => [o.key, o]));
      const runs = sink!.deliveries.filter((d) => d.status === 200 && createdAfter.has(d.key)).map((d) => d.at);
      return runs.length ? Math.min(...runs) : null;
    };
    for (const deadline = killedAt + RECOVERY_DEADLINE_MS; (promotionMs === null || rtoMs === null) && Date.now() < deadline; await sleep(100)) {
      if (promotionMs === null && (await stack.masterPort()) === stack.replica.port) promotionMs = Date.now() - killedAt;
      const ran = firstRunAfter(killedAt);
      if (rtoMs === null && ran !== null) rtoMs = ran - killedAt;
    }
    const promoted = promotionMs === null ? null : stack.replica.name;
    log(`the sentinels promoted ${promoted ?? "nothing"}${promotionMs === null ? "" : ` after ${promotionMs} ms`}; jobs created after the kill ran ${rtoMs === null ? `never (within ${RECOVERY_DEADLINE_MS / 1000} s)` : `${rtoMs} ms after it`}`);
    if (rtoMs === null) violations.push(`jobs never started again within ${RECOVERY_DEADLINE_MS / 1000} s of the Redis primary's loss${useSentinel ? "" : " (no Sentinel configuration)"}`);
    if (promotionMs === null) violations.push("the sentinels never promoted the replica");
    phase.faultMs = rtoMs;
    await sleep(STEADY_MS);

    // The old primary comes back, from its own (AOF) data: a replica of the new primary, never written to.
    let rejoinMs: number | null = null;
    let appConnections = 0;
    let ranAfterRejoin = 0;
    if (rtoMs !== null) {
      const rejoin = beginPhase("old primary back", 0);
      const restartedAt = Date.now();
      await stack.restart(stack.primary);
      rejoin.faults++;
      rejoin.faultAt = restartedAt;
      const probe = stack.admin(stack.primary.port);
      for (const deadline = restartedAt + 30_000; Date.now() < deadline; await sleep(100)) {
        const clients = String(await probe.call("CLIENT", "LIST").catch(() => ""));
        // Anything but the sentinels, replication links and this probe is an app.
        appConnections += clients.split("\n").filter((l) => l.trim() && !/ name=(sentinel-|failover-probe)/.test(l) && !/ flags=[^ ]*[SM]/.test(l)).length;
        const role = (await probe.call("ROLE").catch(() => null)) as [string, string?, number?] | null;
        if (role && role[0] === "slave" && Number(role[2]) === stack.replica.port) {
          rejoinMs = Date.now() - restartedAt;
          break;
        }
      }
      probe.disconnect();
      log(`${stack.primary.name} started again: ${rejoinMs === null ? "it did NOT become a replica within 30 s" : `a replica of ${stack.replica.name} after ${rejoinMs} ms`}; app connections seen on it meanwhile: ${appConnections}`);
      if (rejoinMs === null) violations.push(`the old primary ${stack.primary.name} did not rejoin as a replica`);
      if (appConnections > 0) violations.push(`${appConnections} app connection(s) on the old primary before its demotion`);
      const rejoinedAt = Date.now();
      await sleep(STEADY_MS);
      ranAfterRejoin = load.ops.filter((o) => o.createdAt > rejoinedAt && sink!.deliveries.some((d) => d.key === o.key && d.status === 200)).length;
      if (ranAfterRejoin === 0) violations.push("no job created after the old primary's return ran");
    }
    await load.stop();
    phases[phases.length - 1]!.endedAt = Date.now();
    const creates = measureGap(load, killedAt);

    if (rtoMs !== null) {
      log("drain: load stopped, waiting for every job to finish");
      await drainJobs(cluster.pool, log);
    }
    const acked = load.ops.filter((o) => o.jobId);
    const missing = await missingJobs(cluster.pool, acked);
    if (missing.length) violations.push(`${missing.length} acknowledged creates have no job: ${missing.slice(0, 5).map((o) => o.key).join(", ")}`);
    const verdict = await checkFailoverLoad(cluster.pool, sink, load.ops, phases);
    // Without sentinels the jobs after the kill never run: the verdict's losses are that, already reported.
    if (rtoMs !== null) violations.push(...verdict.violations);
    const outcomes = countOutcomes(load.tries);
    for (const bad of ["bad_503", "server_error", "timeout", "other"] as const) {
      if (outcomes[bad] > 0) violations.push(`${outcomes[bad]} creates answered ${bad}`);
    }
    for (const m of cluster.members.values()) if (!cluster.alive(m)) violations.push(`${m.name} exited during the run`);
    const lostPhase = verdict.rows.find((r) => r.phase === "primary lost");
    return {
      scenario: "Redis primary lost",
      sentinel: useSentinel,
      timings: SENTINEL_TIMINGS,
      killed: stack.primary.name,
      promoted,
      promotionMs,
      rtoMs,
      creates,
      acknowledged: acked.length,
      lost: verdict.totals.lost + missing.length,
      duplicateEffects: verdict.totals.duplicateEffects,
      rawDuplicateDeliveries: verdict.totals.rawDuplicateDeliveries,
      maxStartLagMs: lostPhase?.maxStartLagMs ?? null,
      oldPrimaryRejoinMs: rejoinMs,
      appConnectionsOnOldPrimary: appConnections,
      ranAfterRejoin,
      facts: { ...verdict.facts, ...outcomes },
      violations,
    };
  } finally {
    await load?.stop().catch(() => {});
    await cluster?.stop().catch((err: unknown) => log(`stopping the apps failed: ${String(err)}`));
    await sink?.close();
    await stack.stop().catch((err: unknown) => log(`stopping Redis failed: ${String(err)}`));
    fs.rmSync(baseDir, { recursive: true, force: true });
  }
}
