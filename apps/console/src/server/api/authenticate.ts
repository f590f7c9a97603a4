import { AppError } from "@tick/core";
import { apiKeyMatches, parseApiKey, sql, type Queryable } from "@tick/db";

export interface ApiPrincipal {
  keyId: string;
  scopes: string[];
  tenant: { id: string; shard: number; admissionRate: number; admissionBurst: number; maxPendingJobs: number };
}

const unauthorized = (detail: string) => new AppError("unauthorized", detail);

/**
 * Resolves `Authorization: Bearer <key>` to its key and tenant. Looked up by the key's public prefix
 * and compared by hash in constant time; read fresh on every request, so a revoked key fails at once.
 */
export async function authenticateApiKey(db: Queryable, authorization: string | null): Promise<ApiPrincipal> {
  const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
  if (!match) throw unauthorized("Send the API key as `Authorization: Bearer <key>`.");
  const parsed = parseApiKey(match[1]!);
  if (!parsed) throw unauthorized("The API key is malformed.");
  const row = await sql.findApiKeyForAuth(db, parsed.prefix);
  if (!row || !apiKeyMatches(match[1]!, row.hash)) throw unauthorized("The API key is not valid.");
  if (row.revoked_at) throw unauthorized("The API key has been revoked.");
  if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw unauthorized("The API key has expired.");
  // Fire and forget: bookkeeping must not fail or slow the request (it writes at most once a minute).
  sql.touchApiKey(db, row.key_id).catch(() => {});
  return {
    keyId: row.key_id,
    scopes: row.scopes,
    tenant: {
      id: row.tenant_id,
      shard: row.shard,
      admissionRate: row.admission_rate,
      admissionBurst: row.admission_burst,
      maxPendingJobs: row.max_pending_jobs,
    },
  };
}
