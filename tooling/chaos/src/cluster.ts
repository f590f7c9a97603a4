import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Redis } from "ioredis";
import { createTestDatabase, testServerUrl, type TestDatabase } from "@tick/db/testing";
import { freePort, startProcess, startTcpProxy, waitFor, type RunningProcess, type TcpProxy } from "@tick/testing";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const nextBin = path.join(root, "node_modules/next/dist/bin/next");

export const SHARDS = 8;

/** Shard and attempt lease TTL of the cluster (both SCHEDULER_LEASE_TTL and WORKER_LEASE_TTL). */
export const LEASE_TTL_MS = 3_000;

/** Timings shortened so that failover and lease expiry happen within a chaos phase. */
const FAST = {
  LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? "warn",
  TICK_SHARDS: String(SHARDS),
  TICK_REDIS_PREFIX: "chaos",
  TICK_SSRF_ALLOWED_CIDRS: "127.0.0.0/8",
  SCHEDULER_LEASE_TTL: `${LEASE_TTL_MS}ms`,
  SCHEDULER_LEASE_RENEW_INTERVAL: "1s",
  SCHEDULER_DISPATCH_INTERVAL: "50ms",
  SCHEDULER_REAPER_INTERVAL: "500ms",
  SCHEDULER_LEASE_GRACE: "2s",
  // The production default: recovery from a fault must not wait for this last-resort re-publish.
  SCHEDULER_STRANDED_AFTER: "60s",
  SCHEDULER_RECONCILE_INTERVAL: "1s",
  SCHEDULER_PUBLISH_TIMEOUT: "2s",
  SCHEDULER_RECURRENCE_LOOKAHEAD: "1s",
  SCHEDULER_RECURRENCE_INTERVAL: "250ms",
  // Finished jobs move to history within seconds, so the moves run under every fault too.
  TICK_ARCHIVE_AFTER: "3s",
  TICK_OUTBOX_KEEP: "3s",
  WORKER_LEASE_TTL: `${LEASE_TTL_MS}ms`,
  WORKER_HEARTBEAT_INTERVAL: "1s",
  WORKER_SHUTDOWN_GRACE: "3s",
  WORKER_WEBHOOK_RETRY_BASE: "200ms",
  BREAKER_OPEN_FOR: "3s",
};

/** The documented margin a process clock may be off by: SCHEDULER_LEASE_GRACE. */
export const CLOCK_SKEW_MARGIN_MS = 2_000;

export type Role = "scheduler" | "worker";

export interface Member {
  name: string;
  role: Role;
  proc: RunningProcess;
  healthPort: number;
  frozen: boolean;
  extraEnv: Record<string, string>;
  /** The SCHEDULER_ID/WORKER_ID it runs under (attempts' worker_id names a worker's incarnation: see distinctWorkerIds). */
  id: string;
}

/** PING over a raw socket: true on +PONG. */
function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (d) => done(d.toString().startsWith("+PONG")));
  });
}

/** A private redis-server on 127.0.0.1:port, without persistence, once it answers PING. */
export async function startRedisServer(port: number): Promise<RunningProcess> {
  const proc = startProcess("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
  await waitFor(() => redisPing(port), { timeoutMs: 10_000, description: `redis-server on ${port} (${proc.output().slice(-300)})` });
  return proc;
}

/**
 * Waits for the process's health endpoint. A process that exits first fails the wait at once, unless it
 * was started with fault points armed: then exiting is what it was asked to do (it may hit one at once).
 */
async function ready(url: string, proc: RunningProcess, what: string, mayExit = false) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      if (mayExit) return;
      throw new Error(`${what} exited before it was ready (output: ${proc.output().slice(-600)})`);
    }
    if ((await fetch(url).catch(() => null))?.ok) return;
    if (Date.now() > deadline) throw new Error(`timed out after 60000 ms waiting for ${what} ready (output: ${proc.output().slice(-600)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The product under test, for real: its own database (copied from the migrated template), a private
 * redis-server (so it can be restarted), TCP proxies in front of both (so they can be cut), one console
 * and several schedulers and workers as child processes.
 */
export async function startCluster(options: {
  schedulers: number;
  workers: number;
  log: (line: string) => void;
  logDir?: string;
  /**
   * The product's database (the failover test's HAProxy), which the processes then reach directly, not
   * through pgProxy (its faults are not used there). Default: a fresh copy of the migrated template.
   */
  database?: TestDatabase;
  /** More environment for every process (the failover test's TICK_REGION). */
  env?: Record<string, string>;
  /**
   * The product's Redis (the Redis failover test's primary, or its REDIS_URL beside REDIS_SENTINELS in env),
   * which the processes then reach directly. Default: the private redis-server, through redisProxy.
   */
  redisUrl?: string;
  /** Prefix of process names and so of SCHEDULER_ID/WORKER_ID (two clusters on one database must not share them). */
  namePrefix?: string;
  /**
   * Each start of a worker runs under an ID of its own (`worker-1.2`: its second incarnation), so that the
   * attempts it started and completed can be told from its predecessor's (the metrics check compares them
   * with that incarnation's counters, which a restart resets).
   */
  distinctWorkerIds?: boolean;
}) {
  /** Every process's output, kept for the post-mortem of a failed run (one file per incarnation). */
  const incarnations = new Map<string, number>();
  const keepOutput = (name: string, proc: RunningProcess) => {
    if (!options.logDir) return;
    const n = (incarnations.get(name) ?? 0) + 1;
    incarnations.set(name, n);
    const file = path.join(options.logDir, `${name}.${n}.log`);
    void proc.exited
      .then(() => fs.writeFileSync(file, proc.output()))
      .catch((err: unknown) => options.log(`could not keep ${name}'s output in ${file}: ${err instanceof Error ? err.message : String(err)}`));
  };
  if (options.logDir) fs.mkdirSync(options.logDir, { recursive: true });
  const db: TestDatabase = options.database ?? (await createTestDatabase(testServerUrl()));
  const dbUrl = new URL(db.url);
  const redisPort = await freePort();
  const startRedis = () => startRedisServer(redisPort);
  let redisProc = await startRedis();
  const pgProxy: TcpProxy = await startTcpProxy({ targetHost: dbUrl.hostname, targetPort: Number(dbUrl.port || 5432) });
  const redisProxy: TcpProxy = await startTcpProxy({ targetHost: "127.0.0.1", targetPort: redisPort });
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const env = {
    ...process.env,
    ...FAST,
    ...options.env,
    DATABASE_URL: options.database ? db.url : pgProxy.url(db.url),
    REDIS_URL: options.redisUrl ?? redisProxy.url(redisUrl),
  } as Record<string, string>;
  /** Direct connections (not through the proxies) for the workload's bookkeeping and the checker. */
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  // An idle connection lost to a fault (a failover behind HAProxy) must not end the run; the next query reconnects.
  pool.on("error", () => {});
  const adminRedis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  adminRedis.on("error", () => {});

  const consolePort = await freePort();
  const consoleMetricsPort = await freePort();
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  const consoleProc = startProcess(process.execPath, [nextBin, "start", path.join(root, "apps/console"), "-p", String(consolePort), "-H", "127.0.0.1"], {
    env: {
      ...env,
      NODE_ENV: "production",
      NEXT_TELEMETRY_DISABLED: "1",
      NEXTAUTH_SECRET: "chaos-secret-chaos-secret-chaos-0123",
      NEXTAUTH_URL: consoleUrl,
      CONSOLE_METRICS_PORT: String(consoleMetricsPort),
    },
  });
  const prefix = options.namePrefix ?? "";
  keepOutput(`${prefix}console`, consoleProc);
  const members = new Map<string, Member>();
  const launches = new Map<string, number>();
  const launch = async (name: string, role: Role, extraEnv: Record<string, string> = {}) => {
    const n = (launches.get(name) ?? 0) + 1;
    launches.set(name, n);
    const id = options.distinctWorkerIds && role === "worker" ? `${name}.${n}` : name;
    const healthPort = await freePort();
    const portVar = role === "scheduler" ? "SCHEDULER_HEALTH_PORT" : "WORKER_HEALTH_PORT";
    const idVar = role === "scheduler" ? "SCHEDULER_ID" : "WORKER_ID";
    const profile = process.env.CHAOS_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.CHAOS_CPU_PROF}`] : [];
    const proc = startProcess(process.execPath, [...profile, path.join(root, "apps", role, "dist/main.js")], {
      env: { ...env, [portVar]: String(healthPort), [idVar]: id, ...extraEnv },
    });
    keepOutput(name, proc);
    const member: Member = { name, role, proc, healthPort, frozen: false, extraEnv, id };
    members.set(name, member);
    await ready(`http://127.0.0.1:${healthPort}/healthz`, proc, name, "TICK_FAULT_POINTS" in extraEnv);
    return member;
  };
  /** Runs a member's restarts in order (see restart). */
  const queues = new Map<string, Promise<unknown>>();
  const oneAtATime = <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const run = (queues.get(name) ?? Promise.resolve()).catch(() => {}).then(fn);
    queues.set(name, run);
    return run;
  };
  /** Stops every process (thawing the frozen first), closes the connections and proxies, and drops the database if asked. */
  const tearDown = async (graceMs: number, dropDatabase: boolean) => {
    for (const m of members.values()) {
      if (m.frozen) m.proc.child.kill("SIGCONT");
      await m.proc.stop(graceMs);
    }
    await consoleProc.stop(graceMs);
    adminRedis.disconnect();
    await pool.end();
    await pgProxy.close();
    await redisProxy.close();
    redisProc.child.kill("SIGKILL");
    await redisProc.exited;
    if (dropDatabase) await db.drop();
  };
  try {
    await ready(`${consoleUrl}/readyz`, consoleProc, "console");
    for (let i = 1; i <= options.schedulers; i++) await launch(`${prefix}scheduler-${i}`, "scheduler");
    for (let i = 1; i <= options.workers; i++) await launch(`${prefix}worker-${i}`, "worker");
  } catch (err) {
    // Nothing started here outlives a failed start.
    await tearDown(2_000, !options.database);
    throw err;
  }

  const alive = (m: Member) => m.proc.child.exitCode === null && m.proc.child.signalCode === null;

  return {
    db,
    pool,
    consoleUrl,
    /** The console's metrics side server (/metrics, /healthz, /readyz). */
    consoleMetricsPort,
    pgProxy,
    redisProxy,
    members,
    adminRedis,
    byRole: (role: Role) => [...members.values()].filter((m) => m.role === role),
    /** The console's and redis-server's processes (the region failover test freezes them with their region). */
    consoleProcess: () => consoleProc,
    redisProcess: () => redisProc,
    alive,
    /**
     * SIGKILLs a member once any start of it already under way has finished (see restart): a kill that picked a
     * member another fault of the round was restarting hit the new process while it started, and that fault
     * failed as "exited before it was ready" (seed 12518, mixed round 14). Resolves with the process killed.
     */
    kill(m: Member): Promise<Member> {
      return oneAtATime(m.name, async () => {
        const current = members.get(m.name) ?? m;
        current.proc.child.kill("SIGKILL");
        return current;
      });
    },
    freeze(m: Member) {
      m.proc.child.kill("SIGSTOP");
      m.frozen = true;
    },
    thaw(m: Member) {
      m.proc.child.kill("SIGCONT");
      m.frozen = false;
    },
    /**
     * Starts a member again (after a kill or a crash at a fault point), with different env if asked, killing it
     * first if it runs (SIGKILL, or SIGTERM with `graceful`). Restarts
     * of one member run one after another: two faults of a mixed round that picked the same member (or a
     * fault and the phase's heal) must not kill each other's process while it starts, which made a start
     * fail as "exited before it was ready" and, in the heal, ended a long run.
     */
    restart(m: Member, extraEnv: Record<string, string> = {}, { graceful = false }: { graceful?: boolean } = {}): Promise<Member> {
      return oneAtATime(m.name, async () => {
        const current = members.get(m.name) ?? m;
        if (current.frozen) current.proc.child.kill("SIGCONT");
        if (alive(current)) {
          // Graceful: SIGTERM, as a deploy of new settings stops it (a scheduler releases its shards, a worker
          // drains), then SIGKILL if it has not exited within 15 s. Otherwise a crash: SIGKILL.
          current.proc.child.kill(graceful ? "SIGTERM" : "SIGKILL");
          const timer = graceful ? setTimeout(() => current.proc.child.kill("SIGKILL"), 15_000) : null;
          await current.proc.exited;
          if (timer) clearTimeout(timer);
        }
        return launch(m.name, m.role, extraEnv);
      });
    },
    /**
     * SIGKILLs redis-server and starts it again, empty. Restarts run one after another: two faults of a mixed
     * round that both restarted Redis each started a server on the port, the second failed to bind while the
     * first answered its ping, and the first was left running after the run (it was no longer the one tracked).
     */
    restartRedis(): Promise<void> {
      return oneAtATime("redis-server", async () => {
        redisProc.child.kill("SIGKILL");
        await redisProc.exited;
        redisProc = await startRedis();
      });
    },
    /** Ends every server backend of the product's database (as a failover or an admin would). */
    async terminateBackends(): Promise<number> {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const { rowCount } = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'tick%'`,
        );
        return rowCount ?? 0;
      } finally {
        await admin.end();
      }
    },
    /** Everyone back up and running: thaw the frozen, restart the dead, give Postgres and Redis back. */
    async heal() {
      pgProxy.restore();
      redisProxy.restore();
      for (const m of members.values()) {
        if (m.frozen) this.thaw(m);
        if (!alive(m)) await oneAtATime(m.name, async () => (alive(members.get(m.name) ?? m) ? members.get(m.name)! : launch(m.name, m.role)));
      }
    },
    async stop() {
      await tearDown(5_000, true);
    },
  };
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>;
