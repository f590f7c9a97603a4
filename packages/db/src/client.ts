import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client.js";

export { PrismaClient };
export type * from "./generated/prisma/client.js";

/**
 * Prisma for the console's CRUD. Create it lazily (inside a handler or a composition root), never at
 * module load: Next imports route modules at build time, when there may be no database at all.
 */
export function createPrismaClient(databaseUrl: string, options: { max?: number } = {}): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: options.max ?? 10 }) });
}

export interface PoolOptions {
  max?: number;
  applicationName?: string;
  /** Fail fast when the database is unreachable instead of queueing callers (S3: answer 503 at once). */
  connectionTimeoutMillis?: number;
  statementTimeoutMillis?: number;
}

/** A raw pg pool for the hot paths (claims, leases, completions), which are plain SQL. */
export function createPool(databaseUrl: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "tick",
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
    statement_timeout: options.statementTimeoutMillis ?? 30_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  return pool;
}

/** Readiness: the database answers a trivial query. */
export async function pingDatabase(pool: pg.Pool): Promise<void> {
  await pool.query("SELECT 1");
}

const UNAVAILABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EPIPE", "57P01", "57P02", "57P03"]);

/**
 * True when an error means "the database could not be reached or is shutting down" (answer 503),
 * rather than "the statement was wrong" (a bug, 500).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === "string" && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true;
    if (typeof message === "string" && /Connection terminated|timeout exceeded when trying to connect|connect ECONNREFUSED|Can't reach database/i.test(message)) return true;
    // Prisma wraps driver errors; walk the chain.
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
