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
  /**
   * Most age of a connection's cached plans (default PLAN_MAX_AGE_MS; 0 keeps them for the connection's life):
   * a connection taken from the pool whose plans are older is told DISCARD PLANS first, ahead of its caller's
   * statements. See PLAN_MAX_AGE_MS.
   */
  planMaxAgeMs?: number;
}

/**
 * A named statement (and a trigger's statements) is planned for good after its first calls on a connection,
 * with the table sizes of that moment; nothing but new statistics replans it. A plan made while `jobs` was near
 * empty scans it whole, and a table that grew without an ANALYZE (autovacuum off, or not round yet) keeps paying
 * for that: 27-55 ms per 50-job completion beside 50,000 jobs, against 4-6 ms. Replanning every few seconds
 * bounds that to a few seconds and costs each busy connection one planning of its statements per period.
 */
export const PLAN_MAX_AGE_MS = 5_000;

/** A raw pg pool for the hot paths (claims, leases, completions), which are plain SQL. */
export function createPool(databaseUrl: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "tick",
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 5_000,
    statement_timeout: options.statementTimeoutMillis ?? 30_000,
    idleTimeoutMillis: 30_000,
    // No JIT: Tick's statements are short, and a plan whose estimate passes jit_above_cost (a claim over keys
    // with 100,000-job backlogs, say) spent 95 ms compiling for a 2 ms execution.
    options: "-c jit=off",
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on("error", () => {});
  const planMaxAgeMs = options.planMaxAgeMs ?? PLAN_MAX_AGE_MS;
  if (planMaxAgeMs > 0) {
    const plannedSince = new WeakMap<pg.PoolClient, number>();
    // 'acquire' is emitted before the caller gets the client, so this statement is queued ahead of the caller's.
    pool.on("acquire", (client) => {
      const now = Date.now();
      const since = plannedSince.get(client);
      if (since === undefined) plannedSince.set(client, now);
      else if (now - since >= planMaxAgeMs) {
        plannedSince.set(client, now);
        client.query("DISCARD PLANS").catch(() => {});
      }
    });
  }
  return pool;
}

/** Readiness: the database answers a trivial query. */
export async function pingDatabase(pool: pg.Pool): Promise<void> {
  await pool.query("SELECT 1");
}

const UNAVAILABLE_CODES = new Set([
  ...["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENOTFOUND", "EPIPE"], // sockets
  ...["57P01", "57P02", "57P03", "53300"], // Postgres: shutting down, cannot connect now, too many connections
  // A write refused by a read-only server: a standby still reached during a failover, or a primary that
  // Patroni restarts after a crash (it recovers read-only, then is promoted). Refused before it changed
  // anything, and never raised by COMMIT: retry once the primary accepts writes.
  "25006",
  // Prisma: cannot reach the server, timed out, the server closed the connection, no pool connection in time
  ...["P1001", "P1002", "P1008", "P1017", "P2024"],
]);
/** What @prisma/adapter-pg calls a lost or refused connection (meta.driverAdapterError.cause.kind). */
const UNAVAILABLE_KINDS = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);

/**
 * True when an error means "the database could not be reached or is shutting down" (answer 503),
 * rather than "the statement was wrong" (a bug, 500). Walks the causes: pg errors, and Prisma's
 * wrappers of them (a raw query's failure only says so in its message).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 10) {
    const e = queue.shift();
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const { code, message, kind } = e as { code?: unknown; message?: unknown; kind?: unknown };
    if (typeof code === "string" && (UNAVAILABLE_CODES.has(code) || code.startsWith("08"))) return true;
    if (typeof kind === "string" && UNAVAILABLE_KINDS.has(kind)) return true;
    if (
      typeof message === "string" &&
      /Connection terminated|timeout exceeded when trying to connect|connect ECONN(REFUSED|RESET)|Can't reach database|Server has closed the connection/i.test(message)
    ) {
      return true;
    }
    queue.push((e as { cause?: unknown }).cause, (e as { meta?: { driverAdapterError?: unknown } }).meta?.driverAdapterError);
  }
  return false;
}
