// Accounts: owners of a tenant, tenants as platform operators see them, and actors by name.
// Each takes a pg client or pool, or a Prisma interactive transaction (the statement is the same).
import type { Queryable } from "./types.js";

/** Prisma's client or interactive transaction, as far as these reads need it. */
export interface RawQuerier {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

async function rowsOf<T>(db: Queryable | RawQuerier, text: string, values: unknown[]): Promise<T[]> {
  if ("$queryRawUnsafe" in db) return db.$queryRawUnsafe<T[]>(text, ...values);
  return (await db.query<T & Record<string, unknown>>(text, values)).rows;
}

/**
 * The tenant's owners, their membership rows locked until the transaction ends: a demotion or removal
 * that counts them cannot race another one past the last owner.
 */
export async function lockTenantOwners(db: Queryable | RawQuerier, tenantId: string): Promise<string[]> {
  const rows = await rowsOf<{ user_id: string }>(
    db,
    `SELECT user_id::text FROM memberships WHERE tenant_id = $1::uuid AND role = 'owner' ORDER BY user_id FOR UPDATE`,
    [tenantId],
  );
  return rows.map((r) => r.user_id);
}

export interface OperatorTenantRow {
  id: string;
  slug: string;
  name: string;
  created_at: Date;
  suspended_at: Date | null;
  weight: number;
  admission_rate: number;
  admission_burst: number;
  max_pending_jobs: number;
  max_in_flight: number;
  members: number;
  pending_jobs: number;
}

// Pending jobs through jobs_live_idx (shard, status, tenant; live rows): three index ranges per tenant of a page.
const TENANT_COLUMNS = `t.id, t.slug, t.name, t.created_at, t.suspended_at, t.weight, t.admission_rate, t.admission_burst,
       t.max_pending_jobs, t.max_in_flight,
       (SELECT count(*)::int FROM memberships m WHERE m.tenant_id = t.id) AS members,
       (SELECT count(*)::int FROM jobs j WHERE j.shard = t.shard AND j.status IN ('scheduled', 'dispatched', 'running') AND j.tenant_id = t.id) AS pending_jobs`;

/** Tenants by slug, a page at a time after `afterSlug`, optionally whose slug or name contains `search`. */
export async function listOperatorTenants(
  db: Queryable | RawQuerier,
  f: { search?: string; afterSlug?: string; limit: number },
): Promise<OperatorTenantRow[]> {
  const pattern = f.search ? `%${f.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  return rowsOf<OperatorTenantRow>(
    db,
    `SELECT ${TENANT_COLUMNS} FROM tenants t
      WHERE ($1::text IS NULL OR t.slug ILIKE $1 OR t.name ILIKE $1) AND ($2::text IS NULL OR t.slug > $2)
      ORDER BY t.slug LIMIT $3`,
    [pattern, f.afterSlug ?? null, f.limit],
  );
}

export async function findOperatorTenant(db: Queryable | RawQuerier, id: string): Promise<OperatorTenantRow | null> {
  const rows = await rowsOf<OperatorTenantRow>(db, `SELECT ${TENANT_COLUMNS} FROM tenants t WHERE t.id = $1::uuid`, [id]);
  return rows[0] ?? null;
}

/** Names of actors: users' emails, and API keys' "name (prefix)" within one tenant. */
export async function actorNameRows(
  db: Queryable,
  f: { userIds: string[]; keyIds: string[]; tenantId: string },
): Promise<{ kind: "user" | "api_key"; id: string; name: string }[]> {
  const { rows } = await db.query<{ kind: "user" | "api_key"; id: string; name: string }>(
    `SELECT 'user' AS kind, id::text, email AS name FROM users WHERE id = ANY($1::uuid[])
     UNION ALL
     SELECT 'api_key', id::text, name || ' (' || prefix || ')' FROM api_keys WHERE id = ANY($2::uuid[]) AND tenant_id = $3`,
    [f.userIds, f.keyIds, f.tenantId],
  );
  return rows;
}
