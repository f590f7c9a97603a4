import { AppError } from "@tick/core";
import type { z } from "zod";
import { hasScope, type createApiKeySchema } from "@tick/contract";
import { generateApiKey, prismaTransaction } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import { apiKeyView } from "./views";
import type { TenantServiceDeps } from "./tenant-service-deps";

export async function listApiKeys({ prisma }: TenantServiceDeps, tenantId: string) {
  const keys = await prisma.apiKey.findMany({ where: { tenantId }, orderBy: { createdAt: "desc" } });
  return keys.map(apiKeyView);
}

/**
 * A key can grant only scopes its creator holds, so keys:write cannot mint an admin key, and it takes its
 * creator's role (a person's, or the creating key's), so a key an admin made can never act as an owner.
 */
export async function createApiKey({ prisma }: TenantServiceDeps, principal: ApiPrincipal, input: z.output<typeof createApiKeySchema>) {
  const missing = input.scopes.filter((s) => !hasScope(principal.scopes, s));
  if (missing.length) throw new AppError("forbidden", `A key cannot grant scopes it does not hold: ${missing.join(", ")}.`);
  if (input.expiresAt && Date.parse(input.expiresAt) <= Date.now()) {
    throw new AppError("validation_failed", "expiresAt must be in the future.", { extra: { errors: [{ path: "expiresAt", message: "in the past" }] } });
  }
  const { key, prefix, hash } = generateApiKey();
  const created = await prismaTransaction(prisma, async (tx) => {
    const row = await tx.apiKey.create({
      data: {
        tenantId: principal.tenant.id,
        name: input.name,
        prefix,
        hash,
        scopes: [...new Set(input.scopes)],
        role: principal.role,
        createdBy: `${principal.actor.type}:${principal.actor.id}`,
        expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
      },
    });
    await writeAudit(tx, {
      ...auditActor(principal),
      action: "api_key.created",
      targetType: "api_key",
      targetId: row.id,
      details: { name: row.name, prefix, scopes: row.scopes, role: row.role },
    });
    return row;
  });
  return { key, apiKey: apiKeyView(created) };
}

export async function revokeApiKey({ prisma }: TenantServiceDeps, principal: ApiPrincipal, id: string) {
  return prismaTransaction(prisma, async (tx) => {
    const current = await tx.apiKey.findFirst({ where: { id, tenantId: principal.tenant.id } });
    if (!current) throw new AppError("not_found", "No such API key.");
    const row = current.revokedAt ? current : await tx.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
    if (!current.revokedAt) {
      await writeAudit(tx, {
        ...auditActor(principal),
        action: "api_key.revoked",
        targetType: "api_key",
        targetId: id,
        details: { prefix: row.prefix },
      });
    }
    return apiKeyView(row);
  });
}
