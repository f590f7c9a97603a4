// Steps shared by `npm start` and `npm test`: Node check, dependencies, build, migrations.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import { createBuildProgress, formatElapsed } from "./build-progress.mjs";
import { ROOT } from "./paths.mjs";

export function checkNode() {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    console.error(`Tick needs Node.js 20.19 or newer; this is ${process.versions.node}.`);
    process.exit(1);
  }
}

/** Runs a command in the repository root, inheriting the terminal; throws with the command on failure. */
function run(cmd, args, { env = process.env, quiet = false } = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, env, stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8" });
  if (r.status !== 0) {
    if (quiet) process.stderr.write(`${r.stdout ?? ""}${r.stderr ?? ""}`);
    throw new Error(`\`${cmd} ${args.join(" ")}\` failed with exit code ${r.status}`);
  }
  return r;
}

/** `npm ci` when node_modules is missing or older than the lockfile. */
export function ensureDependencies(log) {
  const marker = path.join(ROOT, "node_modules/.package-lock.json");
  const lock = path.join(ROOT, "package-lock.json");
  if (fs.existsSync(marker) && fs.statSync(marker).mtimeMs >= fs.statSync(lock).mtimeMs) return false;
  log("installing dependencies (npm ci)");
  run("npm", ["ci", "--no-audit", "--no-fund"]);
  return true;
}

/**
 * Builds every package and app (turbo caches unchanged ones) and says how it goes: a line per package
 * built and, while it works, the elapsed time (a status line redrawn every second on a terminal, a
 * line every 30 s otherwise). A failing package's output is printed in full; the rest is not shown.
 */
export function build(log, env) {
  log("building (turbo run build)");
  const started = Date.now();
  const progress = createBuildProgress();
  const tty = Boolean(process.stdout.isTTY);
  const status = () => `${formatElapsed(Date.now() - started)}, ${progress.counts().done} packages done`;
  const clearStatus = () => tty && process.stdout.write("\r\x1b[2K");
  const drawStatus = () => tty && process.stdout.write(`  building… ${status()}`);
  const say = (message) => {
    clearStatus();
    log(message);
    drawStatus();
  };
  let lastLine = started;
  const report = (quietMs = 200) => {
    for (const task of progress.settle(Date.now(), quietMs)) {
      if (!task.cached && !task.failed) say(task.task === "build" ? `built ${task.pkg}` : `${task.pkg}: ${task.task} done`);
    }
    if (tty) {
      clearStatus();
      drawStatus();
    } else if (Date.now() - lastLine >= 30_000) {
      lastLine = Date.now();
      log(`still building (${status()})`);
    }
  };
  const child = spawn("npx", ["turbo", "run", "build", "--output-logs=new-only", "--log-order=grouped", "--ui=stream"], {
    cwd: ROOT,
    env: { ...env, TURBO_TELEMETRY_DISABLED: "1", NEXT_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  for (const stream of [child.stdout, child.stderr]) {
    readline.createInterface({ input: stream }).on("line", (line) => progress.line(line, Date.now()));
  }
  const ticker = setInterval(report, 1000);
  return new Promise((resolve, reject) => {
    child.once("close", (code, signal) => {
      clearInterval(ticker);
      report(0);
      clearStatus();
      const { built, cached } = progress.counts();
      if (code === 0) {
        log(`build done in ${formatElapsed(Date.now() - started)}: ${built} built, ${cached} unchanged (from cache)`);
        resolve();
        return;
      }
      for (const line of progress.failureOutput()) process.stderr.write(`${line}\n`);
      reject(new Error(`\`turbo run build\` failed with ${code ?? signal}`));
    });
  });
}

/** Imports a built workspace module (packages/db/dist/...), available after build(). */
export function importBuilt(relativePath) {
  return import(pathToFileURL(path.join(ROOT, relativePath)).href);
}

export async function migrate(log, databaseUrl) {
  log("applying database migrations (prisma migrate deploy)");
  const { migrateDeploy } = await importBuilt("packages/db/dist/migrate.js");
  await migrateDeploy(databaseUrl);
}

export function makeLogger(tag) {
  const started = Date.now();
  return (message) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
    process.stdout.write(`[${tag} ${seconds}s] ${message}\n`);
  };
}
