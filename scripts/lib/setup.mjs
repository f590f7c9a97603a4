// Steps shared by `npm start` and `npm test`: Node check, dependencies, build, migrations.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "./paths.mjs";

export function checkNode() {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    console.error(`Tick needs Node.js 20.19 or newer; this is ${process.versions.node}.`);
    process.exit(1);
  }
}

/** Runs a command in the repository root, inheriting the terminal; throws with the command on failure. */
export function run(cmd, args, { env = process.env, quiet = false } = {}) {
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

/** Builds every package and app (turbo caches unchanged ones). */
export function build(log, env) {
  log("building (turbo run build)");
  run("npx", ["turbo", "run", "build", "--output-logs=errors-only"], {
    env: { ...env, TURBO_TELEMETRY_DISABLED: "1", NEXT_TELEMETRY_DISABLED: "1" },
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
