import type { Queryable } from "./types.js";
import type { RawQuerier } from "./accounts.js";

export interface ApiKeyAuthRow {
  key_id: string;
  hash: string;
  scopes: string[];
  /** The most the key may do (its maker's role): caps its scopes and owner-only actions. */
  role: "owner" | "admin" | "operator" | "viewer";
  revoked_at: Date | null;
  expires_at: Date | null;
  last_used_at: Date | null;
  tenant_id: string;
  shard: number;
  admission_rate: number;
  admission_burst: number;
  max_pending_jobs: number;
  /** Set while a platform operator has the tenant suspended. */
  suspended_at: Date | null;
}

/**
 * The keys with these public prefixes and their tenants' limits: one indexed lookup for the API requests
 * that arrived together (absent prefixes have no row).
 */
export async function findApiKeysForAuth(db: Queryable, prefixes: string[]): Promise<(ApiKeyAuthRow & { prefix: string })[]> {
  const { rows } = await db.query<ApiKeyAuthRow & { prefix: string }>(
    `SELECT k.prefix, k.id AS key_id, k.hash, k.scopes, k.role, k.revoked_at, k.expires_at, k.last_used_at,
            t.id AS tenant_id, t.shard, t.admission_rate, t.admission_burst, t.max_pending_jobs, t.suspended_at
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.prefix = ANY($1::text[])`,
    [prefixes],
  );
  return rows;
}

/** At most one write a minute per key, so busy keys do not turn every request into a write. */
export async function touchApiKey(db: Queryable, keyId: string): Promise<void> {
  await db.query(
    `UPDATE api_keys SET last_used_at = now()
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [keyId],
  );
}

/** A tenant's shard and admission limits (for a console session, which has no key row to join). */
export async function findTenantLimits(
  db: Queryable,
  tenantId: string,
): Promise<{ id: string; shard: number; admissionRate: number; admissionBurst: number; maxPendingJobs: number; suspendedAt: Date | null } | null> {
  const { rows } = await db.query<{ id: string; shard: number; admissionRate: number; admissionBurst: number; maxPendingJobs: number; suspendedAt: Date | null }>(
    `SELECT id, shard, admission_rate AS "admissionRate", admission_burst AS "admissionBurst", max_pending_jobs AS "maxPendingJobs",
            suspended_at AS "suspendedAt"
       FROM tenants WHERE id = $1`,
    [tenantId],
  );
  return rows[0] ?? null;
}

/**
 * Lowers the role of every key a person made in a tenant, and of the keys those keys made, to at most `role`
 * (the person's new role, or admin when they leave): a key never keeps more than its maker may now do.
 * Roles compare in the enum's order (owner first), so "more powerful than" is "<". Returns the keys lowered.
 */
export async function capKeysMadeBy(db: Queryable | RawQuerier, tenantId: string, userId: string, role: "owner" | "admin" | "operator" | "viewer"): Promise<number> {
  const text = `WITH RECURSIVE made AS (
       SELECT id FROM api_keys WHERE tenant_id = $1::uuid AND created_by = 'user:' || $2
       UNION
       SELECT k.id FROM api_keys k JOIN made m ON k.created_by = 'api_key:' || m.id::text WHERE k.tenant_id = $1::uuid
     )
     UPDATE api_keys SET role = $3::role WHERE id IN (SELECT id FROM made) AND role < $3::role RETURNING id`;
  if ("$queryRawUnsafe" in db) return (await db.$queryRawUnsafe<unknown[]>(text, tenantId, userId, role)).length;
  return (await db.query(text, [tenantId, userId, role])).rowCount ?? 0;
}
