#!/usr/bin/env node
// `npm test`: every test against real Postgres and Redis.
//   1. dependencies, Postgres and Redis (found or started, as for `npm start`), build
//   2. lint (`npm run lint`, counted as one test; its type-aware rules read the build's types), then
//      unit and integration tests: one vitest run over all workspaces (each test makes its own
//      database from a migrated template and its own Redis key prefix)
//   3. the fault-injection suite's short profile (tooling/chaos): the real console, schedulers and
//      workers under a mixed workload while every seed scenario's fault is injected, then the
//      invariant checker (one test; seed TICK_CHAOS_SEED, default 1, so a failure replays)
//      then the failover tests with a real HA stack (tooling/chaos/src/failover, docs/failover.md):
//      Patroni, etcd and HAProxy (Debian packages) under the real apps; S3, the primary killed under load
//      with synchronous and then asynchronous replication; S18, a whole region lost and back; the Redis
//      primary lost under Sentinel (redis-sentinel), and the old primary back; a point-in-time restore from
//      pgBackRest's backup and archive with the restore fence; prints RPO and RTO (one test, about 5 minutes)
//   4. the deployment for real (tooling/deploy/src/live, docs/deployment.md): infra/docker/Dockerfile built, the
//      image checked, infra/compose.yaml run on a Docker engine (started when it does not answer; official base
//      images, or stand-ins built once from Debian's packages) and smoke-tested through its published port: sign-up,
//      a job and its webhook, a schedule, a scheduler killed and taken over, down and up keeping every job, a clean
//      stop (each check counts as a test; about 3 minutes once the base images are cached). In a full run the
//      image is built beside lint (its output printed when it is done) and the stack runs after step 3
//   5. end to end: the product is started with `npm start` on spare ports against a fresh database,
//      Playwright drives it over HTTP and in chromium, then it gets a Ctrl-C (SIGINT to its process
//      group) and must exit 0, every app having logged a clean stop and gone.
// Prints a closing line "tests: N passed, N failed".
// Flags: --unit (steps 1-2 only), --chaos (steps 1 and 3 only), --failover (step 1 and the failover test of 3),
// --deploy (steps 1 and 4 only), --e2e (steps 1 and 5 only).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { stripVTControlCharacters } from "node:util";
import { ROOT } from "./lib/paths.mjs";
import { build, checkNode, ensureDependencies, makeLogger } from "./lib/setup.mjs";

checkNode();
const log = makeLogger("test");
const args = new Set(process.argv.slice(2));
const only = ["--unit", "--chaos", "--failover", "--deploy", "--e2e"].filter((f) => args.has(f));
const runUnit = only.length === 0 || args.has("--unit");
const runChaos = only.length === 0 || args.has("--chaos");
const runFailover = only.length === 0 || args.has("--chaos") || args.has("--failover");
const runDeploy = only.length === 0 || args.has("--deploy");
const runE2e = only.length === 0 || args.has("--e2e");
const dataDir = path.join(ROOT, ".data");
const resultsDir = path.join(dataDir, "test-results");
const totals = { passed: 0, failed: 0, skipped: 0 };
/** What failed, by name, repeated just above the closing line: a log cut to its tail still says which test failed. */
const failures = [];
const cleanups = [];

/** A check (counted as one test) that passed: counted and said. */
function pass(message) {
  totals.passed += 1;
  log(message);
}

/** A check (counted as one test) that failed: counted, said, and named in the closing list. */
function fail(name, why) {
  totals.failed += 1;
  failures.push(`${name}: ${why}`);
  log(`${name}: FAILED (${why})`);
}

/** A check that passes when its command exited 0. */
function byExitCode(name, code, failedNote = "") {
  if (code === 0) pass(`${name}: passed`);
  else fail(name, `exit ${code}${failedNote}`);
}

/** Runs a command with inherited output; resolves with its exit code. */
function exec(cmd, cmdArgs, { env, cwd = ROOT } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { cwd, env, stdio: "inherit" });
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

function withDatabase(url, name) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** `npm run lint`: counts as one test, passed when ESLint exits 0 (no error, no warning). */
async function lint(env) {
  log("lint (eslint . --max-warnings 0)");
  byExitCode("lint", await exec("npm", ["run", "--silent", "lint"], { env }));
}

async function unitAndIntegration(env) {
  log("unit and integration tests (vitest, TZ=UTC)");
  await vitestRun(env, "vitest.json", []);
  // Recurrence must not depend on the machine's zone: its suite runs again under a non-UTC TZ.
  log("recurrence tests again under TZ=Pacific/Chatham");
  await vitestRun({ ...env, TZ: "Pacific/Chatham" }, "vitest-recurrence-tz.json", ["--project", "@tick/recurrence"]);
}

async function vitestRun(env, reportName, extraArgs) {
  const report = path.join(resultsDir, reportName);
  fs.rmSync(report, { force: true });
  const code = await exec(
    process.execPath,
    [path.join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--config", path.join(ROOT, "vitest.all.config.ts"), ...extraArgs, "--reporter=default", "--reporter=json", `--outputFile.json=${report}`],
    { env },
  );
  if (!fs.existsSync(report)) return fail(`vitest ${reportName}`, `exited ${code} without a report`);
  const r = JSON.parse(fs.readFileSync(report, "utf8"));
  totals.passed += r.numPassedTests;
  totals.failed += r.numFailedTests + (code !== 0 && r.numFailedTests === 0 ? 1 : 0);
  totals.skipped += r.numPendingTests + r.numTodoTests;
  for (const file of r.testResults ?? []) {
    const rel = path.relative(ROOT, file.name);
    for (const t of file.assertionResults ?? []) {
      if (t.status === "failed") failures.push(`vitest ${rel} › ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    }
    // A file that failed to load or in a hook has no failed assertion of its own.
    if (file.status === "failed" && !(file.assertionResults ?? []).some((t) => t.status === "failed")) failures.push(`vitest ${rel}: ${firstLine(file.message)}`);
  }
  log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed (exit ${code})`);
}

async function chaos(env) {
  const seed = env.TICK_CHAOS_SEED || "1";
  log(`fault-injection suite, short profile (seed ${seed})`);
  const { ensureRedisServerBinary, ensureFaketime } = await import("./lib/services.mjs");
  try {
    ensureRedisServerBinary(log); // the suite restarts its own redis-server
    ensureFaketime(log); // and injects the database clock for its DST check (skipped, and said so, without it)
  } catch (err) {
    return fail("fault-injection suite", err.message);
  }
  const code = await exec(process.execPath, [path.join(ROOT, "tooling/chaos/dist/main.js"), "--seed", seed, "--json", path.join(resultsDir, "chaos.json")], { env });
  byExitCode(`fault-injection suite, seed ${seed}`, code, ": its violations are printed above");
}

/** The failover tests (S3, S18, Redis, restore): need patroni, etcd-server, haproxy, PostgreSQL 15, redis-sentinel and pgbackrest; a missing one fails them, by name. */
async function failover(env) {
  log("failover tests with Patroni, etcd, HAProxy, Redis Sentinel and pgBackRest (S3: the Postgres primary lost; S18: a region lost; the Redis primary lost; a point-in-time restore)");
  const { ensureRedisServerBinary } = await import("./lib/services.mjs");
  try {
    ensureRedisServerBinary(log); // its apps get a redis-server of their own, as the chaos suite's do
  } catch (err) {
    return fail("failover test", err.message);
  }
  const code = await exec(process.execPath, [path.join(ROOT, "tooling/chaos/dist/failover/main.js"), "--json", path.join(resultsDir, "failover.json")], { env });
  byExitCode("failover test", code);
}

/**
 * The deployment test: each of its checks (image, compose up, smoke test, takeover, down/up, stop) counts as a
 * test. `part` is "build" (the image and its checks only), "stack" (the rest, on that image) or "all".
 */
async function deploy(env, { part = "all", background = false } = {}) {
  const name = part === "build" ? "deploy-build" : "deploy";
  const report = path.join(resultsDir, `${name}.json`);
  const output = path.join(resultsDir, `${name}.log`);
  fs.rmSync(report, { force: true });
  const cmd = [path.join(ROOT, "tooling/deploy/dist/live/main.js"), "--json", report, ...(part === "build" ? ["--build-only"] : part === "stack" ? ["--skip-build"] : [])];
  if (background) {
    // Its output goes to a file, printed whole once it is done.
    log(`deployment test, the image: started beside lint (output in ${path.relative(ROOT, output)}, printed when it is done)`);
    const fd = fs.openSync(output, "w");
    const child = spawn(process.execPath, cmd, { cwd: ROOT, env, stdio: ["ignore", fd, fd] });
    // A run stopped early stops it too.
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    });
    const code = await new Promise((resolve) => child.on("exit", (c, signal) => resolve(c ?? (signal ? 128 : 1))));
    fs.closeSync(fd);
    return () => {
      log("deployment test, the image: its output");
      process.stdout.write(fs.readFileSync(output, "utf8"));
      return countDeploy(report, code);
    };
  }
  log(`deployment test${part === "stack" ? ", the stack" : ""}: infra/compose.yaml run on a Docker engine and smoke-tested (docs/deployment.md)`);
  return countDeploy(report, await exec(process.execPath, cmd, { env }));
}

/** Counts a deployment test run's checks; true when it passed. */
function countDeploy(report, code) {
  if (!fs.existsSync(report)) {
    fail("deployment test", `exited ${code} without a report`);
    return false;
  }
  const { checks } = JSON.parse(fs.readFileSync(report, "utf8"));
  for (const c of checks) {
    if (c.ok) totals.passed += 1;
    else {
      totals.failed += 1;
      failures.push(`deployment test › ${c.name}: ${c.figure}`);
    }
  }
  if (code !== 0 && checks.every((c) => c.ok)) fail("deployment test", `exit ${code}`);
  log(`deployment test: ${checks.filter((c) => c.ok).length} passed, ${checks.filter((c) => !c.ok).length} failed (exit ${code})`);
  return code === 0;
}

async function waitForFile(file, product, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fs.existsSync(file)) return;
    if (product.exitCode !== null) throw new Error(`npm start exited early with ${product.exitCode}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`product not ready within ${timeoutMs / 1000}s`);
}

/** Deletes every key under `prefix:` (SCAN, then DEL in batches), as @tick/testing's createTestRedis cleans up. */
async function deleteRedisKeys(url, prefix) {
  const { Redis } = createRequire(path.join(ROOT, "packages/testing/package.json"))("ioredis");
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) deleted += await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
  return deleted;
}

async function endToEnd(env, serverUrl) {
  const { postgresAnswers, loadPg, redisAnswers } = await import("./lib/services.mjs");
  const database = `tick_e2e_${randomBytes(4).toString("hex")}`;
  // Its own Redis keys too: a developer's `npm start` on this machine shares the Redis, and under the
  // default prefix its sign-in attempts from 127.0.0.1 would count against the suite's (and its queues mix in).
  const redisPrefix = `tick-e2e-${randomBytes(4).toString("hex")}`;
  const e2eDataDir = path.join(dataDir, "e2e");
  fs.rmSync(e2eDataDir, { recursive: true, force: true });
  fs.mkdirSync(e2eDataDir, { recursive: true });
  const stateFile = path.join(e2eDataDir, "state.json");
  const productEnv = {
    ...env,
    DATABASE_URL: withDatabase(serverUrl, database),
    PORT: "3100",
    CONSOLE_METRICS_PORT: "9476",
    SCHEDULER_HEALTH_PORT: "9474",
    WORKER_HEALTH_PORT: "9475",
    TICK_DATA_DIR: e2eDataDir,
    // A failing webhook endpoint reaches "failed" in about a second (the redelivery test), not after 10 tries.
    WORKER_WEBHOOK_MAX_TRIES: "2",
    WORKER_WEBHOOK_RETRY_BASE: "500ms",
    NEXTAUTH_SECRET: "",
    NEXTAUTH_URL: "",
    TICK_REDIS_PREFIX: redisPrefix,
  };

  log(`end to end: starting the product (npm start) against database ${database}, Redis prefix ${redisPrefix}`);
  // `npm start` as a terminal runs it: in its own process group, which the stop below signals as Ctrl-C does.
  const product = spawn("npm", ["start"], { cwd: ROOT, env: productEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let terminal = ""; // what a person running npm start would see
  for (const stream of [product.stdout, product.stderr]) {
    stream.on("data", (chunk) => {
      terminal += chunk;
      process.stdout.write(chunk);
    });
  }
  const productExit = new Promise((resolve) => product.on("exit", (code, signal) => resolve(code ?? signal)));
  if (product.pid === undefined) throw new Error("npm start could not be started");
  const group = -product.pid; // a negative pid signals the whole process group
  let appPids = [];
  // Pushed first, so it runs last (cleanups run in reverse): once no app is left to write a key.
  cleanups.push(async () => {
    if (!(await redisAnswers(env.REDIS_URL))) return;
    const deleted = await deleteRedisKeys(env.REDIS_URL, redisPrefix);
    log(`end to end: deleted ${deleted} Redis key(s) under ${redisPrefix}:`);
  });
  cleanups.push(async () => {
    if (product.exitCode === null && product.signalCode === null) {
      process.kill(group, "SIGKILL");
      await productExit;
    }
    // The apps run in process groups of their own: a product killed above leaves them behind.
    for (const pid of appPids.filter(isAlive)) process.kill(pid, "SIGKILL");
  });
  cleanups.push(async () => {
    if (!(await postgresAnswers(serverUrl))) return;
    const pg = loadPg();
    const admin = new pg.Client({ connectionString: withDatabase(serverUrl, "postgres") });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  });

  try {
    await waitForFile(stateFile, product, 240_000);
  } catch (err) {
    return fail("end to end", err.message);
  }
  const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
  appPids = Object.values(state.pids);
  // The terminal shows the steps, then the summary: an app's plain-text output (Next's banner) stays in its log.
  const leaked = terminal.split("\n").filter((line) => /^ {2}(console|scheduler|worker) \| (?!\{)/.test(line));
  if (leaked.length === 0) pass("start-up output: steps, then the summary (no app's plain-text output in the terminal)");
  else fail("start-up output", `the terminal showed ${leaked.length} line(s) of app output, first: ${JSON.stringify(leaked[0])}`);

  log("end to end: Playwright (chromium)");
  const report = path.join(resultsDir, "playwright.json");
  fs.rmSync(report, { force: true });
  const code = await exec(process.execPath, [path.join(ROOT, "node_modules/@playwright/test/cli.js"), "test", ...(process.env.TICK_E2E_GREP ? ["--grep", process.env.TICK_E2E_GREP] : [])], {
    cwd: path.join(ROOT, "e2e"),
    env: { ...env, TICK_E2E_STATE: stateFile, TICK_E2E_REPORT: report },
  });
  if (fs.existsSync(report)) {
    const { stats } = JSON.parse(fs.readFileSync(report, "utf8"));
    totals.passed += stats.expected + stats.flaky;
    totals.failed += stats.unexpected + (code !== 0 && stats.unexpected === 0 ? 1 : 0);
    totals.skipped += stats.skipped;
    for (const name of playwrightFailures(JSON.parse(fs.readFileSync(report, "utf8")))) failures.push(`playwright ${name}`);
    log(`playwright: ${stats.expected} passed, ${stats.unexpected} failed, ${stats.flaky} flaky (exit ${code})`);
  } else {
    fail("playwright", `exited ${code} without a report`);
  }

  // The README's first command must stop everything it started on Ctrl-C, every app draining cleanly.
  log("end to end: Ctrl-C (SIGINT to the product's process group)");
  process.kill(group, "SIGINT");
  const timer = setTimeout(() => process.kill(group, "SIGKILL"), 30_000);
  const exitCode = await productExit;
  clearTimeout(timer);
  const problems = [];
  if (exitCode !== 0) problems.push(`npm start exited ${exitCode}`);
  for (const [app, url] of Object.entries(state.health)) {
    const answered = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(() => true, () => false);
    if (answered) problems.push(`${app} still answers ${url}`);
    if (isAlive(state.pids[app])) problems.push(`${app} (pid ${state.pids[app]}) is still running`);
    const unclean = uncleanShutdown(path.join(e2eDataDir, "logs", `${app}.log`));
    if (unclean) problems.push(`${app}: ${unclean}`);
  }
  if (problems.length === 0) pass("lifecycle: Ctrl-C stopped npm start cleanly (exit 0; console, scheduler and worker logged a clean stop and are gone)");
  else fail("lifecycle", problems.join("; "));
}

/** The first line of an error message, without ANSI colours, for the closing list. */
function firstLine(message) {
  return stripVTControlCharacters(String(message ?? "(no message)")).split("\n").find((l) => l.trim() !== "")?.trim().slice(0, 300) ?? "(no message)";
}

/** Titles of the tests Playwright's JSON report counts as unexpected (failed in every try). */
function playwrightFailures(report) {
  const out = [];
  const walk = (suite, titles) => {
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        if (t.status !== "unexpected") continue;
        const last = t.results?.at(-1);
        out.push(`${spec.file}:${spec.line} › ${[...titles, spec.title].join(" › ")}: ${firstLine(last?.error?.message)}`);
      }
    }
    for (const child of suite.suites ?? []) walk(child, suite.title && !suite.title.endsWith(".ts") ? [...titles, suite.title] : titles);
  };
  for (const suite of report.suites ?? []) walk(suite, []);
  return out;
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

/** What @tick/runtime's graceful shutdown logs when a stop is not clean. */
const UNCLEAN_STOP = new Set(["second signal during shutdown: exiting now", "shutdown timed out: exiting", "shutdown step failed"]);

/** Why an app's log does not show one clean stop (a "stopped" line with code 0, no forced exit), or null. */
function uncleanShutdown(logFile) {
  if (!fs.existsSync(logFile)) return `no log at ${logFile}`;
  const lines = fs.readFileSync(logFile, "utf8").split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
  const forced = lines.find((l) => UNCLEAN_STOP.has(l.msg));
  if (forced) return `logged "${forced.msg}"`;
  if (!lines.some((l) => l.msg === "shutting down")) return 'no "shutting down" line';
  if (!lines.some((l) => l.msg === "stopped" && l.code === 0)) return 'no "stopped" line with code 0';
  return null;
}

async function main() {
  fs.mkdirSync(resultsDir, { recursive: true });
  const env = { ...process.env, TZ: "UTC", NEXT_TELEMETRY_DISABLED: "1", TURBO_TELEMETRY_DISABLED: "1" };
  log("dependencies");
  ensureDependencies(log);
  log("Postgres and Redis");
  const { ensureServices, redact } = await import("./lib/services.mjs");
  const services = await ensureServices({ env, dataDir, log });
  cleanups.push(() => services.redis.stop(), () => services.database.stop());
  env.DATABASE_URL = services.database.url;
  env.REDIS_URL = services.redis.url;
  log(`database ${redact(env.DATABASE_URL)}, redis ${redact(env.REDIS_URL)}`);
  await build(log, env);

  // With lint, the deployment test's image is built beside it (ESLint and knip leave a core free; the timing
  // tests among the unit tests must not share the machine with a build); its stack runs after the failover tests.
  const imageBeside = runDeploy && runUnit ? deploy(env, { part: "build", background: true }) : null;
  if (runUnit) await lint(env);
  const imageBuilt = imageBeside ? (await imageBeside)() : true;
  if (runUnit) await unitAndIntegration(env);
  if (runChaos) await chaos(env);
  if (runFailover) await failover(env);
  if (runDeploy && imageBuilt) await deploy(env, { part: imageBeside ? "stack" : "all" });
  if (runE2e) await endToEnd(env, env.DATABASE_URL);
}

let exitCode = 1;
try {
  await main();
  exitCode = totals.failed === 0 && totals.passed > 0 ? 0 : 1;
} catch (err) {
  log(`error: ${err?.stack ?? err}`);
  totals.failed += 1;
  failures.push(`the test run itself: ${firstLine(String(err?.message ?? err))}`);
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch((err) => log(`cleanup: ${err.message}`));
}
if (totals.failed > 0) {
  process.stdout.write(`\nfailed (${totals.failed}):\n`);
  for (const f of failures) process.stdout.write(`  ✗ ${f}\n`);
  if (failures.length < totals.failed) process.stdout.write(`  (${totals.failed - failures.length} more without a name: see the lines above that say FAILED or exited)\n`);
}
process.stdout.write(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`);
process.exit(exitCode);
