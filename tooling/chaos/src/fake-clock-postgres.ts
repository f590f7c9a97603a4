import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@tick/testing";
import pg from "pg";
import { chownTree, findPostgresBin, initPostgres, postgresOwner, startPostgres } from "./private-postgres.js";

/** Debian's libfaketime (apt package `faketime`), if installed. */
function findLibfaketime(): string | null {
  for (const dir of ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]) {
    const lib = path.join(dir, "libfaketime.so.1");
    if (fs.existsSync(lib)) return lib;
  }
  return null;
}

/**
 * A private Postgres whose clock is injected (S14): it runs under libfaketime starting at `startAt`
 * and then ticks at the normal rate, in every backend alike. Tick takes every due-time decision from
 * the database clock, so the whole product lives through that instant: a DST transition, say, while
 * the app hosts' own clocks say something else entirely. Null when libfaketime or the Postgres
 * binaries are missing.
 */
export async function startFakeClockPostgres(
  startAt: string,
  log: (line: string) => void,
): Promise<{ url: string; deadlocksBroken: () => number; stop: () => Promise<void> } | null> {
  const lib = findLibfaketime();
  const bin = findPostgresBin();
  if (!lib || !bin) return null;
  let owner: ReturnType<typeof postgresOwner>;
  try {
    owner = postgresOwner();
  } catch {
    return null; // root, and no postgres user to run it as
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-chaos-pg-"));
  chownTree(dir, owner);
  const data = path.join(dir, "data");
  await initPostgres(bin, data, owner);
  const server = await startPostgres({
    bin,
    dataDir: data,
    port: await freePort(),
    socketDir: dir,
    owner,
    settings: { fsync: "off", synchronous_commit: "off", max_connections: 300 },
    env: { ...process.env, TZ: "UTC", LD_PRELOAD: lib, FAKETIME: `@${startAt}`, FAKETIME_DONT_RESET: "1" },
  });
  const breaker = startDeadlockBreaker(server.url("postgres"), log);
  return {
    url: server.url("postgres"),
    deadlocksBroken: () => breaker.broken,
    async stop() {
      await breaker.stop();
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * libfaketime stops the server's timers: statement_timeout, lock_timeout and deadlock_timeout never fire under
 * it (`SET statement_timeout = '500ms'; SELECT pg_sleep(2)` runs its 2 s). Without deadlock_timeout a backend
 * never runs the deadlock check, so a deadlock that Postgres breaks after a second (aborting one of its
 * transactions) would hold its rows for good, and everything queued behind them. This runs the check the server
 * cannot: every second it reads who waits for whom (pg_blocking_pids), and a cycle still there a second later has
 * one member's statement cancelled, as the detector would abort one. Each is logged with its statements.
 */
function startDeadlockBreaker(url: string, log: (line: string) => void): { readonly broken: number; stop: () => Promise<void> } {
  const client = new pg.Client({ connectionString: url, application_name: "chaos-deadlock-breaker" });
  let broken = 0;
  let seen = new Set<string>(); // cycles of the previous check, as sorted pid lists
  let stopped = false;
  let running = false;
  client.on("error", (err) => log(`deadlock breaker: connection error (${err.message})`));
  const connected = client.connect().then(
    () => true,
    (err: Error) => {
      log(`deadlock breaker: cannot connect (${err.message}); deadlocks will not be broken`);
      return false;
    },
  );
  const check = async () => {
    const { rows } = await client.query<{ pid: number; blocked_by: number[]; query: string }>(
      `SELECT pid, pg_blocking_pids(pid) AS blocked_by, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query
         FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
    );
    const waits = new Map(rows.map((r) => [r.pid, r]));
    const cycles = new Map<string, number[]>();
    for (const start of waits.keys()) {
      // Follow the first waiting blocker from each waiting session; coming back to one on the path is a cycle.
      const path: number[] = [];
      let at: number | undefined = start;
      while (at !== undefined && !path.includes(at)) {
        path.push(at);
        at = waits.get(at)?.blocked_by.find((b) => waits.has(b));
      }
      if (at !== undefined) {
        const cycle = path.slice(path.indexOf(at)).sort((a, b) => a - b);
        cycles.set(cycle.join(","), cycle);
      }
    }
    for (const [key, cycle] of cycles) {
      if (!seen.has(key)) continue; // a second old at least, as deadlock_timeout would have it
      const victim = cycle[cycle.length - 1]!;
      await client.query("SELECT pg_cancel_backend($1)", [victim]);
      broken += 1;
      log(`deadlock broken (libfaketime stops the server's own check): cancelled ${victim} of ${cycle.map((p) => `${p}: ${waits.get(p)?.query}`).join(" | ")}`);
    }
    seen = new Set(cycles.keys());
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void connected
      .then((ok) => (ok && !stopped ? check() : undefined))
      .catch(() => {}) // a check that fails is simply tried again a second later
      .finally(() => (running = false));
  }, 1_000);
  return {
    get broken() {
      return broken;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await client.end().catch(() => {});
    },
  };
}
