import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort, startProcess, waitFor, type RunningProcess } from "@tick/testing";
import { chownTree, postgresOwner } from "../private-postgres.js";

/**
 * A real Postgres HA stack on this machine, as docs/failover.md deploys it: etcd (the DCS), Patroni members
 * each running a PostgreSQL 15 server, and HAProxy sending the apps to whichever member's Patroni REST API
 * answers 200 on /primary. The configs are infra/ha/patroni.yml and infra/ha/haproxy.cfg, rendered with
 * spare ports and a temporary directory. Postgres refuses to run as root: as root, every process of the
 * stack runs as the `postgres` user, in directories it owns.
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const HA_TEMPLATE_DIR = path.join(root, "infra/ha");

/** Patroni 3.0 (Debian 12) supports PostgreSQL up to 15. */
const SUPPORTED_PG = [15, 14, 13];

export interface HaTimings {
  /** Patroni's leader lock TTL (s): how long a dead primary keeps the lock. */
  ttl: number;
  loopWait: number;
  retryTimeout: number;
  /** HAProxy health check interval (e.g. "500ms") and how many checks mark a server down / up. */
  checkInterval: string;
  fall: number;
  rise: number;
}

/** Short timings so that a failover takes seconds (Patroni's defaults: ttl 30, loop_wait 10, retry_timeout 10). */
export const TEST_TIMINGS: HaTimings = { ttl: 8, loopWait: 1, retryTimeout: 3, checkInterval: "500ms", fall: 2, rise: 1 };

/** What the stack needs on this machine; throws a message naming the missing package (CI installs them). */
export function findHaBinaries(): { patroni: string; etcd: string; haproxy: string; pgBinDir: string } {
  const which = (cmd: string, pkg: string) => {
    for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/usr/bin"])) {
      const file = path.join(dir, cmd);
      if (fs.existsSync(file)) return file;
    }
    throw new Error(`${cmd} not found: install the Debian package ${pkg} (apt-get install ${pkg})`);
  };
  const pgBinDir = SUPPORTED_PG.map((v) => `/usr/lib/postgresql/${v}/bin`).find((d) => fs.existsSync(path.join(d, "postgres")));
  if (!pgBinDir) throw new Error(`no PostgreSQL ${SUPPORTED_PG.join("/")} server binaries under /usr/lib/postgresql: install postgresql-15`);
  return { patroni: which("patroni", "patroni"), etcd: which("etcd", "etcd-server"), haproxy: which("haproxy", "haproxy"), pgBinDir };
}

/** Replaces every {{name}}; a name without a value, or a value never used, is an error. */
export function renderTemplate(text: string, values: Record<string, string | number | boolean>): string {
  const used = new Set<string>();
  const out = text.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`template: no value for {{${name}}}`);
    used.add(name);
    return String(values[name]);
  });
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length) throw new Error(`template: values never used: ${unused.join(", ")}`);
  return out;
}

/** The parent pid of a process (field 4 of /proc/PID/stat), or null once it is gone (a zombie counts as gone). */
function parentOf(pid: number): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state, ppid] = fields.slice(fields.lastIndexOf(")") + 2).split(" ");
    return state === "Z" ? null : Number(ppid);
  } catch {
    return null;
  }
}

const alive = (pid: number) => parentOf(pid) !== null;

/**
 * Postgres processes of this stack that outlived their postmaster: their title names the cluster (Patroni
 * sets cluster_name to the scope, which is unique to the run). SIGKILLed; returns their pids.
 */
function killStrays(scope: string): number[] {
  const found: number[] = [];
  for (const pid of fs.readdirSync("/proc").map(Number).filter(Number.isInteger)) {
    let title = "";
    try {
      title = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (!title.startsWith(`postgres: ${scope}: `)) continue;
    try {
      process.kill(pid, "SIGKILL");
      found.push(pid);
    } catch {
      // gone already
    }
  }
  return found;
}

/**
 * SIGKILL of a postmaster and of every child it has (each child runs in a session of its own, so neither
 * a process group nor a session reaches them all). Children normally exit once their postmaster is gone;
 * a stopped one (a stalled WAL sender) would not, and would keep the data directory's shared memory.
 */
function killPostmasterTree(pm: number) {
  const children = fs
    .readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && parentOf(pid) === pm);
  for (const pid of [pm, ...children]) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  return children;
}

/** Stacks not yet stopped, so that an interrupted run (SIGINT, SIGTERM) still kills their processes. */
const liveStacks = new Set<() => Promise<void>>();

/** Stops every stack still running; for the entry point's signal handler. */
export async function stopAllStacks(): Promise<void> {
  await Promise.all([...liveStacks].map((stop) => stop()));
}

interface StackProcess {
  name: string;
  proc: RunningProcess;
}

export interface PatroniMember {
  name: string;
  region: string;
  pgPort: number;
  restPort: number;
  restUrl: string;
  dataDir: string;
  /** Patroni's own process (null while the member is down). */
  patroni: RunningProcess | null;
  /** The postmaster's pid from postmaster.pid, when one runs. */
  postmasterPid(): number | null;
}

interface PatroniClusterInfo {
  members: { name: string; role: string; state: string; lag?: number | string; timeline?: number }[];
}

/**
 * etcd members, Patroni members and HAProxies, each startable and killable on its own (a region's loss
 * kills its etcd member, its Patroni member and its HAProxy together). stop() kills everything that is
 * left, postmasters included, and removes the directory: call it in a finally.
 */
export async function createHaStack(options: { baseDir: string; scope: string; log: (line: string) => void; logDir?: string; timings?: HaTimings }) {
  const bins = findHaBinaries();
  // As root, every process of the stack runs as the postgres user, and owns its files.
  const owner = postgresOwner();
  const timings = options.timings ?? TEST_TIMINGS;
  const { log } = options;
  fs.mkdirSync(options.baseDir, { recursive: true });
  chownTree(options.baseDir, owner);
  const spawnOptions = { ...(owner ? { uid: owner.uid, gid: owner.gid } : {}), cwd: options.baseDir, env: { ...process.env, HOME: options.baseDir } };
  const processes: StackProcess[] = [];
  const incarnations = new Map<string, number>();

  const start = (name: string, command: string, args: string[]): RunningProcess => {
    const proc = startProcess(command, args, spawnOptions);
    processes.push({ name, proc });
    if (options.logDir) {
      fs.mkdirSync(options.logDir, { recursive: true });
      const n = (incarnations.get(name) ?? 0) + 1;
      incarnations.set(name, n);
      const file = path.join(options.logDir, `${name}.${n}.log`);
      void proc.exited.then(() => fs.writeFileSync(file, proc.output()));
    }
    return proc;
  };
  const writeOwned = (file: string, text: string) => {
    fs.writeFileSync(file, text, { mode: 0o600 });
    if (owner) fs.chownSync(file, owner.uid, owner.gid);
  };
  const mkdirOwned = (dir: string) => {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  };

  // --- etcd -----------------------------------------------------------------------------------------
  const etcdMembers: { name: string; region: string; clientPort: number; peerPort: number; proc: RunningProcess | null }[] = [];

  /** Declares the etcd members (one per region: a quorum survives one region's loss when there are three). */
  async function defineEtcd(regions: string[]) {
    for (const region of regions) etcdMembers.push({ name: `etcd-${region}`, region, clientPort: await freePort(), peerPort: await freePort(), proc: null });
  }
  const etcdHosts = () => etcdMembers.map((m) => `127.0.0.1:${m.clientPort}`).join(",");

  function startEtcdMember(name: string) {
    const m = etcdMembers.find((e) => e.name === name)!;
    const dir = path.join(options.baseDir, m.name);
    mkdirOwned(dir);
    const cluster = etcdMembers.map((e) => `${e.name}=http://127.0.0.1:${e.peerPort}`).join(",");
    m.proc = start(m.name, bins.etcd, [
      "--name", m.name,
      "--data-dir", path.join(dir, "data"),
      "--listen-client-urls", `http://127.0.0.1:${m.clientPort}`,
      "--advertise-client-urls", `http://127.0.0.1:${m.clientPort}`,
      "--listen-peer-urls", `http://127.0.0.1:${m.peerPort}`,
      "--initial-advertise-peer-urls", `http://127.0.0.1:${m.peerPort}`,
      "--initial-cluster", cluster,
      "--initial-cluster-state", "new",
      "--initial-cluster-token", options.scope,
      // Short heartbeats, so a lost member's leadership moves in about a second.
      "--heartbeat-interval", "100", "--election-timeout", "1000",
    ]);
  }

  async function startEtcd() {
    for (const m of etcdMembers) startEtcdMember(m.name);
    await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${etcdMembers[0]!.clientPort}/health`).catch(() => null);
        return r?.ok && ((await r.json()) as { health?: string }).health === "true";
      },
      { timeoutMs: 30_000, intervalMs: 200, description: `etcd healthy (${etcdMembers.map((m) => m.proc?.output().slice(-300)).join(" | ")})` },
    );
  }

  // --- Patroni ---------------------------------------------------------------------------------------
  const members: PatroniMember[] = [];
  let synchronousMode = true;

  async function defineMember(name: string, region: string): Promise<PatroniMember> {
    const restPort = await freePort();
    const dir = path.join(options.baseDir, name);
    const m: PatroniMember = {
      name,
      region,
      pgPort: await freePort(),
      restPort,
      restUrl: `http://127.0.0.1:${restPort}`,
      dataDir: path.join(dir, "data"),
      patroni: null,
      postmasterPid() {
        try {
          return Number(fs.readFileSync(path.join(this.dataDir, "postmaster.pid"), "utf8").split("\n")[0]) || null;
        } catch {
          return null;
        }
      },
    };
    members.push(m);
    return m;
  }

  /** Starts (or starts again) a member's Patroni; it bootstraps, clones, rewinds or follows as Patroni decides. */
  function startMember(m: PatroniMember) {
    const dir = path.dirname(m.dataDir);
    mkdirOwned(dir);
    const config = path.join(dir, "patroni.yml");
    writeOwned(
      config,
      renderTemplate(fs.readFileSync(path.join(HA_TEMPLATE_DIR, "patroni.yml"), "utf8"), {
        scope: options.scope,
        name: m.name,
        host: "127.0.0.1",
        restPort: m.restPort,
        pgPort: m.pgPort,
        etcdHosts: etcdHosts(),
        ttl: timings.ttl,
        loopWait: timings.loopWait,
        retryTimeout: timings.retryTimeout,
        synchronousMode,
        replicationUser: "replicator",
        replicationPassword: "tick-replication",
        superuserPassword: "tick-superuser",
        hostAuth: "scram-sha-256",
        dataDir: m.dataDir,
        binDir: bins.pgBinDir,
        pgpass: path.join(dir, "pgpass"),
        socketDir: dir,
      }),
    );
    m.patroni = start(m.name, bins.patroni, [config]);
  }

  async function clusterInfo(): Promise<PatroniClusterInfo | null> {
    for (const m of members) {
      if (!m.patroni) continue;
      const r = await fetch(`${m.restUrl}/cluster`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      if (r?.ok) return (await r.json()) as PatroniClusterInfo;
    }
    return null;
  }

  /** The member whose REST API answers 200 on /primary (what HAProxy sees), or null. */
  async function primary(): Promise<PatroniMember | null> {
    for (const m of members) {
      if (!m.patroni) continue;
      const r = await fetch(`${m.restUrl}/primary`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      if (r?.status === 200) return m;
    }
    return null;
  }

  /** Waits until `names` run as one primary and streaming standbys (a sync standby in synchronous mode). */
  async function waitHealthy(names: string[], timeoutMs = 90_000) {
    return waitFor(
      async () => {
        const info = await clusterInfo();
        if (!info) return false;
        const running = info.members.filter((x) => names.includes(x.name) && ["running", "streaming"].includes(x.state));
        if (running.length !== names.length) return false;
        const leaders = running.filter((x) => x.role === "leader");
        const standbys = running.filter((x) => x.role !== "leader");
        if (leaders.length !== 1) return false;
        if (synchronousMode && names.length > 1 && !standbys.some((x) => x.role === "sync_standby")) return false;
        // Every standby has caught up (lag in bytes; "unknown" while it starts).
        return standbys.every((x) => x.lag === 0) && info;
      },
      { timeoutMs, intervalMs: 250, description: `Patroni members ${names.join(", ")} healthy (${members.map((m) => `${m.name}: ${m.patroni?.output().slice(-400) ?? "down"}`).join(" | ")})` },
    );
  }

  /** Sets synchronous_mode in the DCS (PATCH /config); applies to the running cluster within a loop. */
  async function setSynchronousMode(on: boolean) {
    const leader = await primary();
    if (!leader) throw new Error("no primary to configure");
    const r = await fetch(`${leader.restUrl}/config`, { method: "PATCH", body: JSON.stringify({ synchronous_mode: on }), headers: { "content-type": "application/json" } });
    if (!r.ok) throw new Error(`PATCH /config answered ${r.status}: ${await r.text()}`);
    synchronousMode = on;
  }

  /**
   * The member's machine dies: SIGKILL of Patroni and of the postmaster at once (a SIGKILL of the postmaster
   * alone is a crash Patroni repairs in place, restarting it while it still holds the leader lock: no
   * failover). Backends notice their postmaster's death and exit; the rest of its session is killed too.
   */
  async function killMember(m: PatroniMember) {
    const pm = m.postmasterPid();
    m.patroni?.child.kill("SIGKILL");
    const children = pm !== null && alive(pm) ? killPostmasterTree(pm) : [];
    await m.patroni?.exited;
    m.patroni = null;
    for (const pid of [pm ?? 0, ...children].filter((p) => p > 0)) await waitFor(() => !alive(pid), { timeoutMs: 10_000, description: `postgres process ${pid} of ${m.name} gone` });
  }

  /**
   * SIGKILL of the postmaster alone (and its session's backends): a crash. Patroni, alive and holding the
   * leader lock, restarts it in place on its next loop.
   */
  async function killPostmaster(m: PatroniMember) {
    const pm = m.postmasterPid();
    if (pm === null) throw new Error(`${m.name} has no postmaster`);
    const children = alive(pm) ? killPostmasterTree(pm) : [];
    for (const pid of [pm, ...children]) await waitFor(() => !alive(pid), { timeoutMs: 10_000, description: `postgres process ${pid} of ${m.name} gone` });
  }

  /**
   * Stops (SIGSTOP) the primary's WAL senders: from now on the standby receives nothing, as over a stalled
   * link. With synchronous replication commits wait; with asynchronous they return, and what they wrote
   * exists on the primary only. Returns the stopped pids (the primary's kill ends them).
   */
  async function stallReplication(primary: PatroniMember): Promise<number[]> {
    const c = new pg.Client({ connectionString: memberUrl(primary, "postgres"), connectionTimeoutMillis: 3_000 });
    await c.connect();
    try {
      const { rows } = await c.query<{ pid: number }>(`SELECT pid FROM pg_stat_replication`);
      for (const { pid } of rows) process.kill(pid, "SIGSTOP");
      return rows.map((r) => r.pid);
    } finally {
      await c.end().catch(() => {});
    }
  }

  // --- HAProxy ---------------------------------------------------------------------------------------
  const proxies: { name: string; port: number; proc: RunningProcess | null; members: PatroniMember[] }[] = [];

  async function startHaproxy(name: string, over: PatroniMember[] = members) {
    const existing = proxies.find((p) => p.name === name);
    const port = existing?.port ?? (await freePort());
    const dir = path.join(options.baseDir, name);
    mkdirOwned(dir);
    const config = path.join(dir, "haproxy.cfg");
    writeOwned(
      config,
      renderTemplate(fs.readFileSync(path.join(HA_TEMPLATE_DIR, "haproxy.cfg"), "utf8"), {
        host: "127.0.0.1",
        port,
        checkInterval: timings.checkInterval,
        fall: timings.fall,
        rise: timings.rise,
        servers: over.map((m) => `    server ${m.name} 127.0.0.1:${m.pgPort} maxconn 400 check port ${m.restPort}`).join("\n"),
      }),
    );
    const proc = start(name, bins.haproxy, ["-db", "-f", config]);
    if (existing) existing.proc = proc;
    else proxies.push({ name, port, proc, members: over });
    // Ready once a query goes through to the primary.
    await waitFor(
      async () => {
        const c = new pg.Client({ connectionString: `postgresql://postgres:tick-superuser@127.0.0.1:${port}/postgres`, connectionTimeoutMillis: 2_000 });
        try {
          await c.connect();
          return (await c.query<{ r: boolean }>("SELECT NOT pg_is_in_recovery() AS r")).rows[0]!.r;
        } finally {
          await c.end().catch(() => {});
        }
      },
      { timeoutMs: 30_000, intervalMs: 250, description: `${name} routing to the primary (${proc.output().slice(-400)})` },
    );
    return port;
  }

  function killHaproxy(name: string) {
    const p = proxies.find((x) => x.name === name)!;
    p.proc?.child.kill("SIGKILL");
    p.proc = null;
  }

  const databaseUrl = (proxyName: string, database: string) =>
    `postgresql://postgres:tick-superuser@127.0.0.1:${proxies.find((p) => p.name === proxyName)!.port}/${database}`;
  /** A connection to one member directly (not through HAProxy), to see what it is. */
  const memberUrl = (m: PatroniMember, database: string) => `postgresql://postgres:tick-superuser@127.0.0.1:${m.pgPort}/${database}`;

  async function stop() {
    liveStacks.delete(stop);
    const leftovers: number[] = [];
    for (const m of members) {
      const pm = m.postmasterPid();
      m.patroni?.child.kill("SIGKILL");
      if (pm !== null && alive(pm)) leftovers.push(pm, ...killPostmasterTree(pm));
    }
    // Stalled WAL senders of an earlier kill (their postmaster gone, they were stopped): found by their stack's name.
    leftovers.push(...killStrays(options.scope));
    for (const p of processes) p.proc.child.kill("SIGKILL");
    await Promise.all(processes.map((p) => p.proc.exited));
    for (const pid of leftovers) await waitFor(() => !alive(pid), { timeoutMs: 10_000, description: `postgres process ${pid} gone` }).catch((err: Error) => log(err.message));
    fs.rmSync(options.baseDir, { recursive: true, force: true });
  }

  liveStacks.add(stop);

  return {
    bins,
    members,
    etcdMembers,
    defineEtcd,
    startEtcd,
    startEtcdMember,
    killEtcdMember(name: string) {
      const m = etcdMembers.find((e) => e.name === name)!;
      m.proc?.child.kill("SIGKILL");
      m.proc = null;
    },
    defineMember,
    startMember,
    killMember,
    killPostmaster,
    stallReplication,
    clusterInfo,
    primary,
    waitHealthy,
    setSynchronousMode,
    get synchronousMode() {
      return synchronousMode;
    },
    startHaproxy,
    killHaproxy,
    databaseUrl,
    memberUrl,
    stop,
  };
}

export type HaStack = Awaited<ReturnType<typeof createHaStack>>;
