import type { Queryable } from "./types.js";

export interface ApiKeyAuthRow {
  key_id: string;
  hash: string;
  scopes: string[];
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

/** The key with this public prefix and its tenant's limits: one indexed lookup per API request. */
export async function findApiKeyForAuth(db: Queryable, prefix: string): Promise<ApiKeyAuthRow | null> {
  const { rows } = await db.query<ApiKeyAuthRow>(
    `SELECT k.id AS key_id, k.hash, k.scopes, k.revoked_at, k.expires_at, k.last_used_at,
            t.id AS tenant_id, t.shard, t.admission_rate, t.admission_burst, t.max_pending_jobs, t.suspended_at
       FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
      WHERE k.prefix = $1`,
    [prefix],
  );
  return rows[0] ?? null;
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
