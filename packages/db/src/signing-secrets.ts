import { generateSigningSecret } from "./api-keys.js";
import { listSigningSecrets, insertSigningSecret } from "./sql/webhooks.js";
import type { Queryable } from "./sql/types.js";

/**
 * The tenant's valid signing secrets, newest first, minting the first one if there is none yet. Two
 * callers racing may both mint one; both are then valid and both sign, which is harmless.
 */
export async function ensureSigningSecrets(db: Queryable, tenantId: string): Promise<{ secret: string; created_at: Date; expires_at: Date | null }[]> {
  const rows = await listSigningSecrets(db, tenantId);
  if (rows.length > 0) return rows;
  await insertSigningSecret(db, tenantId, generateSigningSecret());
  return listSigningSecrets(db, tenantId);
}
