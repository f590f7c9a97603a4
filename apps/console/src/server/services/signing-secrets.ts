import { ensureSigningSecrets, generateSigningSecret, inTransaction, sql } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import type { TenantServiceDeps } from "./tenant-service-deps";

const view = (rows: Awaited<ReturnType<typeof sql.listSigningSecrets>>) => ({
  data: rows.map((r) => ({ secret: r.secret, createdAt: r.created_at.toISOString(), expiresAt: r.expires_at ? r.expires_at.toISOString() : null })),
});

/** The tenant's valid signing secrets; the first call mints one. */
export async function listSigningSecrets({ pool: db }: TenantServiceDeps, tenantId: string) {
  return view(await ensureSigningSecrets(db, tenantId));
}

/** A new secret, the current ones kept for the overlap; the rotation and its audit row commit together. */
export async function rotateSigningSecret({ pool }: TenantServiceDeps, principal: ApiPrincipal, overlapSeconds: number) {
  const tenantId = principal.tenant.id;
  return inTransaction(pool, async (client) => {
    await sql.rotateSigningSecret(client, tenantId, generateSigningSecret(), overlapSeconds * 1000);
    await sql.insertAudit(client, { ...auditActor(principal), action: "webhook_secret.rotated", targetType: "tenant", targetId: tenantId, details: { overlapSeconds } });
    return view(await sql.listSigningSecrets(client, tenantId));
  });
}
