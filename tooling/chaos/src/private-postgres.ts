import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { startProcess, waitFor, type RunningProcess } from "@tick/testing";

/** A user's ids, for processes spawned as that user and the files they must own. */
export interface Owner {
  uid: number;
  gid: number;
}

/** The newest PostgreSQL server binaries under /usr/lib/postgresql (Debian's postgresql-NN), or null. */
export function findPostgresBin(): string | null {
  const base = "/usr/lib/postgresql";
  if (!fs.existsSync(base)) return null;
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, "bin/initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(base, versions[0], "bin") : null;
}

/** As root: the postgres user's ids (PostgreSQL refuses to run as root; throws if there is no such user). Otherwise null: run as we are. */
export function postgresOwner(): Owner | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

/** Gives `dir` and everything below it to `owner` (nothing to do when null). */
export function chownTree(dir: string, owner: Owner | null) {
  if (!owner) return;
  fs.chownSync(dir, owner.uid, owner.gid);
  for (const entry of fs.readdirSync(dir, { recursive: true })) fs.chownSync(path.join(dir, String(entry)), owner.uid, owner.gid);
}

/** Runs a command to its end as `owner`; resolves with its output, rejects with the output's tail on a non-zero exit. */
export function runToEnd(command: string, args: string[], options: { owner: Owner | null; env?: NodeJS.ProcessEnv; cwd?: string }): Promise<string> {
  const child = spawn(command, args, { ...(options.owner ?? {}), env: options.env ?? process.env, ...(options.cwd ? { cwd: options.cwd } : {}) });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return new Promise((resolve, reject) =>
    child.on("exit", (code) => (code === 0 ? resolve(output) : reject(new Error(`${path.basename(command)} ${args[0] ?? ""}: exit ${code}: ${output.slice(-800)}`)))),
  );
}

/** A new data directory (trust authentication for the local user postgres), owned by `owner`. */
export async function initPostgres(bin: string, dataDir: string, owner: Owner | null): Promise<void> {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  chownTree(path.dirname(dataDir), owner);
  await runToEnd(path.join(bin, "initdb"), ["-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync"], { owner, env: { ...process.env, LC_ALL: "C" } });
}

export interface PrivatePostgres {
  port: number;
  /** A connection URL to one of its databases (user postgres, no password). */
  url(database: string): string;
  proc: RunningProcess;
  /** Shuts it down (SIGINT: fast, the default; SIGQUIT: immediate, no checkpoint) and waits for the postmaster to exit. */
  stop(signal?: "SIGINT" | "SIGQUIT"): Promise<void>;
}

/**
 * Starts a postmaster on an existing data directory, listening on 127.0.0.1:port and in `socketDir`, with
 * `settings` as -c options, and waits until it answers queries and (with `writable`) has left recovery: a
 * server restoring from an archive answers read-only queries long before it is promoted.
 */
export async function startPostgres(options: {
  bin: string;
  dataDir: string;
  port: number;
  socketDir: string;
  owner: Owner | null;
  settings?: Record<string, string | number>;
  env?: NodeJS.ProcessEnv;
  writable?: boolean;
  timeoutMs?: number;
}): Promise<PrivatePostgres> {
  const settings = Object.entries({ listen_addresses: "127.0.0.1", ...options.settings }).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
  const proc = startProcess(path.join(options.bin, "postgres"), ["-D", options.dataDir, "-p", String(options.port), "-k", options.socketDir, ...settings], {
    ...(options.owner ?? {}),
    env: options.env ?? process.env,
  });
  const url = (database: string) => `postgresql://postgres@127.0.0.1:${options.port}/${database}`;
  await waitFor(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`postgres exited: ${proc.output().slice(-800)}`);
      const c = new pg.Client({ connectionString: url("postgres"), connectionTimeoutMillis: 2_000 });
      c.on("error", () => {});
      try {
        await c.connect();
        const { rows } = await c.query<{ recovering: boolean }>("SELECT pg_is_in_recovery() AS recovering");
        return !options.writable || !rows[0]!.recovering;
      } catch {
        return false;
      } finally {
        await c.end().catch(() => {});
      }
    },
    { timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 100, description: `postgres on ${options.dataDir} answering${options.writable ? " and out of recovery" : ""}` },
  );
  return {
    port: options.port,
    url,
    proc,
    async stop(signal = "SIGINT") {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
      await proc.exited;
    },
  };
}
