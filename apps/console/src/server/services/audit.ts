import type { PrismaClient } from "@tick/db";

export interface AuditEntry {
  tenantId: string;
  /** "api_key" | "user" | "system" */
  actorType: string;
  actorId: string | null;
  action: string;
  targetType?: string;
  targetId?: string;
  details?: Record<string, unknown>;
}

type AuditWriter = Pick<PrismaClient, "auditLog">;

/** One row per operator-visible change (keys, queues, cancels, replays), with who did it. */
export async function writeAudit(db: AuditWriter, entry: AuditEntry): Promise<void> {
  await db.auditLog.create({
    data: {
      tenantId: entry.tenantId,
      actorType: entry.actorType,
      actorId: entry.actorId,
      action: entry.action,
      targetType: entry.targetType ?? null,
      targetId: entry.targetId ?? null,
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- false positive: tsc rejects this value for Prisma's Json input type without the cast
      details: (entry.details ?? {}) as object,
    },
  });
}
