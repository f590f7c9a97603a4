// Transactional outbox relay (S4, S10): rows are written in the same transaction as the state change
// they announce; a relay publishes them and only then marks them published.
import type { Queryable } from "./types.js";

export interface OutboxRow {
  id: string;
  kind: "dispatch" | "webhook";
  shard: number;
  tenant_id: string;
  job_id: string | null;
  attempt_id: string | null;
  payload: Record<string, unknown>;
  tries: number;
  created_at: Date;
}

/**
 * Locks the oldest unpublished rows that are available now. Call inside a transaction and keep it open
 * while publishing: other relays skip the locked rows, so several relays can run at once.
 */
export async function lockUnpublishedOutbox(db: Queryable, limit: number): Promise<OutboxRow[]> {
  const { rows } = await db.query<OutboxRow>(
    `SELECT id, kind, shard, tenant_id, job_id, attempt_id, payload, tries, created_at FROM outbox
      WHERE published_at IS NULL AND available_at <= now()
      ORDER BY available_at, id
      LIMIT $1
      FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows.map((r) => ({ ...r, id: String(r.id) }));
}

export async function markOutboxPublished(db: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(`UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[]) AND published_at IS NULL`, [ids]);
}

/** After a failed publish: try again after `delayMs` (database time), remembering why. */
export async function deferOutbox(db: Queryable, ids: string[], delayMs: number, error: string): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE outbox SET tries = tries + 1, last_error = left($3, 1000), available_at = now() + make_interval(secs => $2 / 1000.0)
      WHERE id = ANY($1::bigint[])`,
    [ids, delayMs, error],
  );
}

/** Unpublished rows and the age of the oldest (publication lag), for metrics and alerts. */
export async function outboxBacklog(db: Queryable): Promise<{ count: number; oldestAgeMs: number }> {
  const { rows } = await db.query<{ count: number; oldest_age_ms: number | null }>(
    `SELECT count(*)::int AS count, (extract(epoch FROM now() - min(created_at)) * 1000)::bigint AS oldest_age_ms
       FROM outbox WHERE published_at IS NULL`,
  );
  return { count: rows[0]!.count, oldestAgeMs: Number(rows[0]!.oldest_age_ms ?? 0) };
}
