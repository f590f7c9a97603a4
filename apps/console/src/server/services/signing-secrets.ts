import { ensureSigningSecrets, generateSigningSecret, sql, type Queryable } from "@tick/db";

const view = (rows: Awaited<ReturnType<typeof sql.listSigningSecrets>>) => ({
  data: rows.map((r) => ({ secret: r.secret, createdAt: r.created_at.toISOString(), expiresAt: r.expires_at ? r.expires_at.toISOString() : null })),
});

/** The tenant's valid signing secrets; the first call mints one. */
export async function listSigningSecrets(db: Queryable, tenantId: string) {
  return view(await ensureSigningSecrets(db, tenantId));
}

export async function rotateSigningSecret(db: Queryable, tenantId: string, overlapSeconds: number) {
  await sql.rotateSigningSecret(db, tenantId, generateSigningSecret(), overlapSeconds * 1000);
  return view(await sql.listSigningSecrets(db, tenantId));
}
