import type pg from "pg";
import type { Cidr } from "@tick/core";
import type { PrismaClient } from "@tick/db";
import type { Logger } from "@tick/runtime";
import type { BreakerView } from "@tick/breaker";

/**
 * The one deps object of the console's tenant-scoped services (keys, queues, schedules, replays, settings and
 * exports, signing secrets, the audit log, the overview and stats, job reads and cancel, dependencies and their
 * breakers): the clients they use and the config they read, wired once from the environment
 * (server/api/deps.ts: getTenantServiceDeps). Sign-up, members, operators, sessions and webhooks take their own,
 * narrower objects; job creation takes JobServiceDeps. Not to be confused with @tick/runtime's ServiceDeps,
 * what the scheduler's and worker's processes are built from.
 */
export interface TenantServiceDeps {
  prisma: PrismaClient;
  pool: pg.Pool;
  logger: Logger;
  /** SSRF: non-public ranges job targets may use anyway (TICK_SSRF_ALLOWED_CIDRS). */
  allowedCidrs: readonly Cidr[];
  /** The deployment's ceiling on a tenant's retention (TICK_RETENTION_MAX_DAYS). */
  retentionMaxDays: number;
  /** Circuit breakers of these dependencies, read through @tick/breaker; null when Redis did not answer in time. */
  readBreakers: (tenantId: string, keys: readonly string[]) => Promise<Map<string, BreakerView> | null>;
}
