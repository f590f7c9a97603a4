import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, waitFor } from "@tick/testing";

/** Debian's libfaketime (apt package `faketime`), if installed. */
function findLibfaketime(): string | null {
  for (const dir of ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]) {
    const lib = path.join(dir, "libfaketime.so.1");
    if (fs.existsSync(lib)) return lib;
  }
  return null;
}

function findPostgresBin(): string | null {
  const base = "/usr/lib/postgresql";
  if (!fs.existsSync(base)) return null;
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, "bin/initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(base, versions[0], "bin") : null;
}

function run(child: ChildProcess): Promise<void> {
  let output = "";
  child.stdout?.on("data", (d) => (output += d));
  child.stderr?.on("data", (d) => (output += d));
  return new Promise((resolve, reject) => child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}: ${output.slice(-500)}`)))));
}

/**
 * A private Postgres whose clock is injected (S14): it runs under libfaketime starting at `startAt`
 * and then ticks at the normal rate, in every backend alike. Tick takes every due-time decision from
 * the database clock, so the whole product lives through that instant: a DST transition, say, while
 * the app hosts' own clocks say something else entirely. Null when libfaketime or the Postgres
 * binaries are missing.
 */
export async function startFakeClockPostgres(startAt: string): Promise<{ url: string; stop: () => Promise<void> } | null> {
  const lib = findLibfaketime();
  const bin = findPostgresBin();
  if (!lib || !bin) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-chaos-pg-"));
  const asRoot = process.getuid?.() === 0;
  let ids: { uid: number; gid: number } | undefined;
  if (asRoot) {
    const passwd = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"));
    if (!passwd) return null;
    const [, , uid, gid] = passwd.split(":");
    ids = { uid: Number(uid), gid: Number(gid) };
    fs.chownSync(dir, ids.uid, ids.gid);
  }
  const data = path.join(dir, "data");
  await run(spawn(path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], { ...ids, env: { ...process.env, LC_ALL: "C" } }));
  const port = await freePort();
  const server = spawn(
    path.join(bin, "postgres"),
    ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=300"],
    { ...ids, env: { ...process.env, TZ: "UTC", LD_PRELOAD: lib, FAKETIME: `@${startAt}`, FAKETIME_DONT_RESET: "1" }, stdio: "ignore" },
  );
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const pg = (await import("pg")).default;
  await waitFor(
    async () => {
      const c = new pg.Client({ connectionString: url });
      try {
        await c.connect();
        await c.query("SELECT 1");
        return true;
      } catch {
        return false;
      } finally {
        await c.end().catch(() => {});
      }
    },
    { timeoutMs: 30_000, description: "the fake-clock Postgres" },
  );
  return {
    url,
    async stop() {
      server.kill("SIGINT");
      await new Promise((r) => server.once("exit", r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
