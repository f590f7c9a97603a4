import { JOB_STATES, type JobState } from "@tick/core";
import { sql } from "@tick/db";
import type { TenantServiceDeps } from "./tenant-service-deps";

export interface TenantOverview {
  jobsByStatus: Record<JobState, number>;
  queues: { name: string; paused: boolean }[];
  schedules: number;
  apiKeys: number;
  /** Retention and export; null only if the tenant vanished meanwhile. */
  lifecycle: sql.TenantSettingsRow | null;
}

/** Counts for one tenant's dashboard; every query is scoped by tenant id. */
export async function getTenantOverview({ prisma, pool }: Pick<TenantServiceDeps, "prisma" | "pool">, tenantId: string): Promise<TenantOverview> {
  const [groups, queues, schedules, apiKeys, lifecycle] = await Promise.all([
    sql.countJobsByStatus(pool, tenantId, 24),
    prisma.queue.findMany({ where: { tenantId }, select: { name: true, paused: true }, orderBy: { name: "asc" } }),
    prisma.schedule.count({ where: { tenantId } }),
    prisma.apiKey.count({ where: { tenantId, revokedAt: null } }),
    sql.findTenantSettings(pool, tenantId),
  ]);
  const jobsByStatus = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as TenantOverview["jobsByStatus"];
  for (const g of groups) jobsByStatus[g.status] = g.n;
  return { jobsByStatus, queues, schedules, apiKeys, lifecycle };
}
