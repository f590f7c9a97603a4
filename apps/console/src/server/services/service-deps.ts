import type pg from "pg";
import type { Cidr } from "@tick/core";
import type { PrismaClient } from "@tick/db";
import type { Logger } from "@tick/runtime";
import type { BreakerView } from "@tick/breaker";

/**
 * The one deps object of the console's tenant services (keys, queues, schedules, replays, settings,
 * signing secrets, the audit log, job reads and cancel, dependencies): the clients they use and the config they read,
 * wired once from the environment (server/api/deps.ts: getServiceDeps). Sign-up, members, operators and
 * webhooks take their own, narrower objects; job creation takes JobServiceDeps.
 */
export interface ServiceDeps {
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
