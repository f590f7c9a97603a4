import { invalidCursor } from "../api/keyset-cursor";
import type { PrismaClient } from "@tick/db";

export interface AuditFilter {
  action?: string;
  targetType?: string;
  targetId?: string;
  actorId?: string;
  since?: string;
  until?: string;
  limit: number;
  cursor?: string;
}

/** One tenant's audit entries, newest first, keyset-paginated on the entry id. */
export async function listAuditLog(prisma: PrismaClient, tenantId: string, f: AuditFilter) {
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
      ...(f.since || f.until ? { createdAt: { ...(f.since ? { gte: new Date(f.since) } : {}), ...(f.until ? { lt: new Date(f.until) } : {}) } } : {}),
      ...(before !== undefined ? { id: { lt: before } } : {}),
    },
    orderBy: { id: "desc" },
    take: f.limit + 1,
  });
  const page = rows.slice(0, f.limit);
  return {
    data: page.map((r) => ({
      id: String(r.id),
      actorType: r.actorType,
      actorId: r.actorId,
      action: r.action,
      targetType: r.targetType,
      targetId: r.targetId,
      details: r.details as Record<string, unknown>,
      createdAt: r.createdAt.toISOString(),
    })),
    nextCursor: rows.length > f.limit ? String(page[page.length - 1]!.id) : null,
  };
}
