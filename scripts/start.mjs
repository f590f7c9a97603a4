#!/usr/bin/env node
// `npm start`: brings the whole product up on a fresh machine with Node 20 and nothing else.
// Installs dependencies, finds or starts Postgres and Redis, migrates, seeds a demo tenant, builds,
// starts console + scheduler + worker, waits until each reports ready, and prints the console URL,
// the login and an API key. Ctrl-C (or SIGTERM) stops everything it started: each app drains and
// exits 0, then the local Postgres/Redis if it started them, and it exits 0.
//
// Environment (all optional): DATABASE_URL, REDIS_URL, PORT (console, 3000), TICK_BIND_HOST (127.0.0.1),
// CONSOLE_METRICS_PORT (9466), SCHEDULER_HEALTH_PORT (9464), WORKER_HEALTH_PORT (9465), TICK_DATA_DIR (.data),
// NEXTAUTH_SECRET, LOG_LEVEL. Every other variable is passed through to the apps (see README "Configuration").
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { ROOT } from "./lib/paths.mjs";
import { build, checkNode, ensureDependencies, importBuilt, makeLogger, migrate } from "./lib/setup.mjs";

checkNode();
const log = makeLogger("tick");
const dataDir = path.resolve(ROOT, process.env.TICK_DATA_DIR || ".data");
const logDir = path.join(dataDir, "logs");
const port = Number(process.env.PORT || 3000);
// Where the console and the health servers listen (the apps' schemas default to loopback as well).
const bindHost = process.env.TICK_BIND_HOST || "127.0.0.1";
// How this machine reaches them: an every-interface address over loopback, IPv6 in brackets.
const host = bindHost === "0.0.0.0" ? "127.0.0.1" : bindHost === "::" ? "[::1]" : bindHost.includes(":") ? `[${bindHost}]` : bindHost;
const consoleMetricsPort = Number(process.env.CONSOLE_METRICS_PORT || 9466);
const schedulerHealthPort = Number(process.env.SCHEDULER_HEALTH_PORT || 9464);
const workerHealthPort = Number(process.env.WORKER_HEALTH_PORT || 9465);
const DEMO_EMAIL = "demo@tick.local";

const children = [];
let services;
let stopping;

/** A secret kept in the data folder so restarts keep sessions, logins and the demo key. */
function persisted(name, make) {
  const file = path.join(dataDir, name);
  if (fs.existsSync(file)) return fs.readFileSync(file, "utf8").trim();
  const value = make();
  fs.writeFileSync(file, value + "\n", { mode: 0o600 });
  return value;
}

/**
 * Whether a line an app wrote goes to the terminal too: JSON log lines at warn and above, and on stderr
 * any other text (a crash's stack trace, Next's own warnings). Text on stdout (Next's banner) stays in
 * the log file, so the terminal shows the steps and then the summary.
 */
function echoed(line, stream) {
  let level;
  try {
    level = JSON.parse(line).level;
  } catch {
    return stream === "stderr";
  }
  return level === "warn" || level === "error" || level === "fatal";
}

/**
 * Starts an app with its output in .data/logs/<name>.log; warnings and errors are echoed here. Each app
 * runs in its own process group: a terminal's Ctrl-C (SIGINT to the foreground group) then reaches only
 * this script, which stops every app with exactly one SIGTERM (two signals would make an app give up
 * its drain and exit 1) and stops Postgres/Redis only after the apps have drained into them.
 */
function startApp(name, command, args, env) {
  const out = fs.createWriteStream(path.join(logDir, `${name}.log`), { flags: "a" });
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  for (const stream of ["stdout", "stderr"]) {
    readline.createInterface({ input: child[stream] }).on("line", (line) => {
      out.write(`${line}\n`);
      if (line.trim() && echoed(line, stream)) process.stdout.write(`  ${name} | ${line}\n`);
    });
  }
  child.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  child.once("close", () => out.end()); // after the last line of its output, unlike "exit"
  child.exited.then((code) => {
    if (!stopping) {
      log(`${name} exited unexpectedly (${code}); stopping everything. See ${path.join(logDir, `${name}.log`)}`);
      void shutdown(1);
    }
  });
  children.push({ name, child });
  return child;
}

async function waitReady(name, url, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (stopping) throw new Error("stopping");
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = err.message;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`${name} not ready after ${timeoutMs / 1000}s (${url}: ${last})`);
}

async function shutdown(code) {
  if (stopping) return stopping;
  stopping = (async () => {
    log("stopping… (Ctrl-C again to force)");
    const exits = await Promise.all(
      children.map(async ({ name, child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        const exit = await child.exited;
        clearTimeout(timer);
        log(exit === 0 ? `${name} stopped` : `${name} stopped with ${exit}; see ${path.join(logDir, `${name}.log`)}`);
        return exit;
      }),
    );
    if (exits.some((exit) => exit !== 0)) code = 1;
    if (services) {
      await services.redis.stop();
      await services.database.stop();
      if (services.redis.started || services.database.started) log("local Postgres/Redis stopped");
    }
    fs.rmSync(path.join(dataDir, "state.json"), { force: true });
    log("stopped");
    process.exit(code);
  })();
  return stopping;
}

// `npm start` forwards the terminal's SIGINT to this script, which the terminal signals too, so one
// Ctrl-C arrives twice within milliseconds. A signal within a second of the first is that same
// Ctrl-C; a later one is the person pressing it again: every app still running is signalled a
// second time, which makes it exit at once (code 1).
const SAME_SIGNAL_MS = 1_000;
let firstSignalAt;
function onSignal() {
  if (firstSignalAt === undefined) {
    firstSignalAt = Date.now();
    void shutdown(0);
  } else if (Date.now() - firstSignalAt > SAME_SIGNAL_MS) {
    log("forcing the apps to stop");
    for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  }
}
// SIGHUP too: the apps are in their own process groups, so a closed terminal no longer reaches them.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, onSignal);

async function main() {
  fs.mkdirSync(logDir, { recursive: true });
  const env = { ...process.env, TZ: process.env.TZ || "UTC" };

  log("[1/6] dependencies");
  ensureDependencies(log);

  log("[2/6] Postgres and Redis");
  const { ensureServices, redact } = await import("./lib/services.mjs");
  services = await ensureServices({ env, dataDir, log });
  env.DATABASE_URL = services.database.url;
  env.REDIS_URL = services.redis.url;
  log(`database ${redact(env.DATABASE_URL)}${services.database.started ? " (started here)" : ""}`);
  log(`redis    ${redact(env.REDIS_URL)}${services.redis.started ? " (started here)" : ""}`);

  log("[3/6] build");
  await build(log, env);

  log("[4/6] migrations and demo data");
  await migrate(log, env.DATABASE_URL);
  const { createPrismaClient, seedDemo } = await importBuilt("packages/db/dist/index.js");
  const password = persisted("demo-password", () => randomBytes(9).toString("base64url"));
  const keyFile = path.join(dataDir, "demo-api-key");
  const savedKey = fs.existsSync(keyFile) ? fs.readFileSync(keyFile, "utf8").trim() : undefined;
  const prisma = createPrismaClient(env.DATABASE_URL, { max: 2 });
  let seeded;
  try {
    seeded = await seedDemo(prisma, { shardCount: Number(env.TICK_SHARDS || 16), email: DEMO_EMAIL, password, apiKey: savedKey });
  } finally {
    await prisma.$disconnect();
  }
  if (seeded.apiKey !== savedKey) fs.writeFileSync(keyFile, seeded.apiKey + "\n", { mode: 0o600 });

  log("[5/6] starting console, scheduler and worker");
  const consoleUrl = `http://${host}:${port}`;
  env.NEXTAUTH_SECRET ||= persisted("nextauth-secret", () => randomBytes(32).toString("base64url"));
  env.NEXTAUTH_URL ||= consoleUrl;
  env.TICK_BIND_HOST = bindHost;
  env.CONSOLE_METRICS_PORT = String(consoleMetricsPort);
  env.SCHEDULER_HEALTH_PORT = String(schedulerHealthPort);
  env.WORKER_HEALTH_PORT = String(workerHealthPort);
  // The demo's jobs call local endpoints; a real deployment leaves this empty (public targets only).
  env.TICK_SSRF_ALLOWED_CIDRS ??= "127.0.0.0/8,::1/128";
  // Anyone reaching this console may create a tenant (a deployment leaves it unset: closed).
  env.TICK_SIGNUP ??= "open";
  // Sign-up and invitation mails: to the mail server if one is configured, else written as files here.
  if (!env.SMTP_URL) env.TICK_MAIL_DIR ||= path.join(dataDir, "mail");
  // A TICK_MAIL_DIR given with SMTP_URL wins there too (the console's mailer).
  const mailDir = env.TICK_MAIL_DIR ? path.resolve(ROOT, env.TICK_MAIL_DIR) : null;
  if (mailDir) env.TICK_MAIL_DIR = mailDir;
  // Whoever runs the local demo runs its platform: the demo login is a platform operator (the Operator page).
  env.TICK_OPERATOR_EMAILS ??= DEMO_EMAIL;
  env.NODE_ENV = "production";
  env.NEXT_TELEMETRY_DISABLED = "1";
  // The console handles SIGTERM itself (drains, exits 0); Next's own handler would exit 143.
  env.NEXT_MANUAL_SIG_HANDLE = "true";
  const nextBin = path.join(ROOT, "node_modules/next/dist/bin/next");
  startApp("console", process.execPath, [nextBin, "start", path.join(ROOT, "apps/console"), "-p", String(port), "-H", bindHost], env);
  startApp("scheduler", process.execPath, [path.join(ROOT, "apps/scheduler/dist/main.js")], env);
  startApp("worker", process.execPath, [path.join(ROOT, "apps/worker/dist/main.js")], env);

  log("[6/6] waiting for readiness");
  const health = {
    console: `${consoleUrl}/readyz`,
    scheduler: `http://${host}:${schedulerHealthPort}/readyz`,
    worker: `http://${host}:${workerHealthPort}/readyz`,
  };
  await Promise.all(Object.entries(health).map(([name, url]) => waitReady(name, url)));

  const state = {
    consoleUrl,
    email: DEMO_EMAIL,
    password,
    apiKey: seeded.apiKey,
    pid: process.pid,
    pids: Object.fromEntries(children.map(({ name, child }) => [name, child.pid])),
    health,
    // Where sign-up and invitation mails are written (null: sent to SMTP_URL).
    mailDir,
    // Prometheus scrapes each process on its side port (docs/observability.md).
    metrics: {
      console: `http://${host}:${consoleMetricsPort}/metrics`,
      scheduler: `http://${host}:${schedulerHealthPort}/metrics`,
      worker: `http://${host}:${workerHealthPort}/metrics`,
    },
  };
  fs.writeFileSync(path.join(dataDir, "state.json"), JSON.stringify(state, null, 2), { mode: 0o600 });

  process.stdout.write(
    [
      "",
      "  Tick is running.",
      "",
      `  Console   ${consoleUrl}`,
      `  Login     ${DEMO_EMAIL} / ${password}`,
      `  API key   ${seeded.apiKey}`,
      "",
      `  Try:      curl -H "Authorization: Bearer ${seeded.apiKey}" ${consoleUrl}/api/v1/openapi.json`,
      `  Logs      ${logDir}/{console,scheduler,worker}.log`,
      `  Mail      ${mailDir ? `written to ${mailDir} (a JSON file per mail, not sent: set SMTP_URL to send them)` : `sent through SMTP_URL`}`,
      "  Stop      Ctrl-C",
      "",
      "",
    ].join("\n"),
  );
}

main().catch(async (err) => {
  // A Ctrl-C during a step makes that step fail too (turbo, say, got the same SIGINT): not worth a line.
  if (!stopping) log(`failed: ${err?.message ?? err}`);
  await shutdown(1);
});
