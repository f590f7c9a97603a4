import type { Queryable } from "./types.js";

/** One row of the audit log: who (`api_key`, `user` or `system`, and which), did what, to what. */
export interface AuditEntry {
  tenantId: string;
  actorType: string;
  actorId: string | null;
  action: string;
  targetType?: string | null;
  targetId?: string | null;
  details?: Record<string, unknown>;
}

/** Prisma's client or interactive transaction, as far as the audit writer needs it. */
export interface RawExecutor {
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

const INSERT_AUDIT = `INSERT INTO audit_log (tenant_id, actor_type, actor_id, action, target_type, target_id, details)
  VALUES ($1::uuid, $2, $3, $4, $5, $6, $7::jsonb)`;

/**
 * The one audit writer: called with the transaction that makes the change it records, a pg client
 * (`inTransaction`) or a Prisma interactive transaction, so the row commits with the change or neither
 * does. The same statement either way.
 */
export async function insertAudit(db: Queryable | RawExecutor, e: AuditEntry): Promise<void> {
  const values = [e.tenantId, e.actorType, e.actorId, e.action, e.targetType ?? null, e.targetId ?? null, JSON.stringify(e.details ?? {})];
  if ("$executeRawUnsafe" in db) await db.$executeRawUnsafe(INSERT_AUDIT, ...values);
  else await db.query(INSERT_AUDIT, values);
}
