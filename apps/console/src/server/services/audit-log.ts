import { invalidCursor } from "../api/keyset-cursor";
import { actorNames } from "./actor-names";
import type { TenantServiceDeps } from "./tenant-service-deps";

export interface AuditFilter {
  action?: string;
  targetType?: string;
  targetId?: string;
  actorId?: string;
  actorType?: string;
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

/** One tenant's audit entries, newest first, keyset-paginated on the entry id. */
export async function listAuditLog({ prisma, pool }: TenantServiceDeps, tenantId: string, f: AuditFilter) {
  let before: bigint | undefined;
  if (f.cursor) {
    if (!/^\d{1,19}$/.test(f.cursor)) throw invalidCursor();
    before = BigInt(f.cursor);
  }
  const rows = await prisma.auditLog.findMany({
    where: {
      tenantId,
      ...(f.action ? { action: f.action } : {}),
      ...(f.targetType ? { targetType: f.targetType } : {}),
      ...(f.targetId ? { targetId: f.targetId } : {}),
      ...(f.actorId ? { actorId: f.actorId } : {}),
      ...(f.actorType ? { actorType: f.actorType } : {}),
      ...(f.since || f.until ? { createdAt: { ...(f.since ? { gte: new Date(f.since) } : {}), ...(f.until ? { lt: new Date(f.until) } : {}) } } : {}),
      ...(before !== undefined ? { id: { lt: before } } : {}),
    },
    orderBy: { id: "desc" },
    take: f.limit + 1,
  });
  const page = rows.slice(0, f.limit);
  const nameOf = await actorNames(pool, tenantId, page.map((r) => ({ type: r.actorType, id: r.actorId })));
  return {
    data: page.map((r) => ({
      id: String(r.id),
      actorType: r.actorType,
      actorId: r.actorId,
      actorName: nameOf({ type: r.actorType, id: r.actorId }),
      action: r.action,
      targetType: r.targetType,
      targetId: r.targetId,
      details: r.details as Record<string, unknown>,
      createdAt: r.createdAt.toISOString(),
    })),
    nextCursor: rows.length > f.limit ? String(page[page.length - 1]!.id) : null,
  };
}
