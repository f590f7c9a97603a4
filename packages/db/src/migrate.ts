import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** packages/db, where prisma.config.ts lives (this file runs from src/ in tests and dist/ in apps). */
export const DB_PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));

/** The repository's migration folders, as prisma.config.ts names them (one folder per migration, a migration.sql each). */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));

export interface PrismaCliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the Prisma CLI (through the offline schema-engine shim) against `databaseUrl`. */
export function runPrismaCli(args: string[], databaseUrl: string): Promise<PrismaCliResult> {
  const require = createRequire(import.meta.url);
  const cli = require.resolve("prisma/build/index.js");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      cwd: DB_PACKAGE_DIR,
      // eslint-disable-next-line no-restricted-properties -- the CLI child inherits the environment (PATH, HOME), not config
      env: { ...process.env, DATABASE_URL: databaseUrl, CHECKPOINT_DISABLE: "1", PRISMA_HIDE_UPDATE_MESSAGE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** `prisma migrate deploy`: creates the database if missing and applies pending migrations. */
export async function migrateDeploy(databaseUrl: string): Promise<void> {
  const result = await runPrismaCli(["migrate", "deploy"], databaseUrl);
  if (result.code !== 0) {
    throw new Error(`prisma migrate deploy failed (exit ${result.code}):\n${result.stderr || result.stdout}`);
  }
}
