import { getContext } from "./context";

export const JOB_STATUS_ORDER = ["scheduled", "dispatched", "running", "succeeded", "dead", "cancelled", "expired"] as const;

export interface TenantOverview {
  jobsByStatus: Record<(typeof JOB_STATUS_ORDER)[number], number>;
  queues: { name: string; paused: boolean }[];
  schedules: number;
  apiKeys: number;
}

/** Counts for one tenant's dashboard; every query is scoped by tenant id. */
export async function getTenantOverview(tenantId: string): Promise<TenantOverview> {
  const { prisma } = getContext();
  const [groups, queues, schedules, apiKeys] = await Promise.all([
    prisma.job.groupBy({ by: ["status"], where: { tenantId }, _count: { _all: true } }),
    prisma.queue.findMany({ where: { tenantId }, select: { name: true, paused: true }, orderBy: { name: "asc" } }),
    prisma.schedule.count({ where: { tenantId } }),
    prisma.apiKey.count({ where: { tenantId, revokedAt: null } }),
  ]);
  const jobsByStatus = Object.fromEntries(JOB_STATUS_ORDER.map((s) => [s, 0])) as TenantOverview["jobsByStatus"];
  for (const g of groups) jobsByStatus[g.status] = g._count._all;
  return { jobsByStatus, queues, schedules, apiKeys };
}
