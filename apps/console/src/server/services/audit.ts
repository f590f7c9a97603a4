import { sql } from "@tick/db";

export type AuditEntry = sql.AuditEntry;

/**
 * One row per operator-visible change (keys, queues, cancels, replays), with who did it. Pass the
 * transaction that makes the change (a pg client or a Prisma interactive transaction): the row commits
 * with it or not at all. One writer for both (`sql.insertAudit`).
 */
export function writeAudit(db: Parameters<typeof sql.insertAudit>[0], entry: AuditEntry): Promise<void> {
  return sql.insertAudit(db, entry);
}
