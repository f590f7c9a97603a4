import { AppError } from "@tick/core";
import type { z } from "zod";
import { slugify, type signUpSchema } from "@tick/contract";
import { generateApiKey, hashPassword, prismaTransaction, shardForTenant, verifyPassword, type PrismaClient } from "@tick/db";
import type { AuthLimits } from "../api/auth-limits";
import { writeAudit } from "./audit";
import { apiKeyView } from "./views";

export type SignUpMode = "open" | "invite" | "closed";

/** What the account services need, wired once (server/api/deps.ts: getAccountDeps). */
export interface AccountDeps {
  prisma: PrismaClient;
  limits: AuthLimits;
  signUpMode: SignUpMode;
  shardCount: number;
}

/**
 * Sign-up (issue #19): a tenant with a default queue, its owner and an admin API key, in one transaction
 * with its audit rows, so a tenant never exists half-made. The owner is a new user, or an existing one
 * who proves it with their password (someone in several tenants). Refused unless TICK_SIGNUP is open;
 * rate limited per client address (every attempt) and per email (every sign-up).
 */
export async function signUp(deps: AccountDeps, input: z.output<typeof signUpSchema>, clientAddress: string) {
  if (deps.signUpMode !== "open") {
    throw new AppError(
      "signup_closed",
      deps.signUpMode === "invite" ? "Sign-up is by invitation only: ask a member of your team to invite you." : "Sign-up is closed on this deployment.",
    );
  }
  await deps.limits.hitAddress("signup", clientAddress);
  await deps.limits.checkEmail("signup", input.email);
  await deps.limits.hitEmail("signup", input.email);

  const slug = input.slug ?? slugify(input.tenantName);
  const existing = await deps.prisma.user.findUnique({ where: { email: input.email } });
  if (existing && !(existing.passwordHash && (await verifyPassword(input.password, existing.passwordHash)))) {
    throw new AppError("conflict", "An account with this email already exists. Sign up with its password to add a tenant to it, or sign in.", {
      extra: { errors: [{ path: "email", message: "already registered" }] },
    });
  }
  const passwordHash = existing ? null : await hashPassword(input.password);
  const { key, prefix, hash } = generateApiKey();
  const tenantId = crypto.randomUUID();
  const taken = () =>
    new AppError("conflict", `The tenant name "${slug}" is taken. Choose another.`, { extra: { errors: [{ path: "slug", message: "taken" }] } });
  if (await deps.prisma.tenant.findUnique({ where: { slug }, select: { id: true } })) throw taken();

  return prismaTransaction(deps.prisma, async (tx) => {
    const tenant = await tx.tenant
      .create({ data: { id: tenantId, slug, name: input.tenantName, shard: shardForTenant(tenantId, deps.shardCount), queues: { create: { name: "default" } } } })
      .catch((err: { code?: string }) => {
        // Two sign-ups racing for one slug past the check above: the unique index decides.
        if (err.code === "P2002") throw taken();
        throw err;
      });
    const user =
      existing ??
      (await tx.user
        .create({ data: { email: input.email, name: input.name ?? null, passwordHash } })
        .catch((err: { code?: string }) => {
          if (err.code === "P2002") throw new AppError("conflict", "An account with this email was just created. Sign in instead.");
          throw err;
        }));
    await tx.membership.create({ data: { userId: user.id, tenantId, role: "owner" } });
    const apiKey = await tx.apiKey.create({ data: { tenantId, name: "First key", prefix, hash, scopes: ["admin"], createdBy: `user:${user.id}` } });
    const actor = { tenantId, actorType: "user" as const, actorId: user.id };
    await writeAudit(tx, { ...actor, action: "tenant.created", targetType: "tenant", targetId: tenantId, details: { slug, name: tenant.name, via: "signup" } });
    await writeAudit(tx, { ...actor, action: "member.added", targetType: "user", targetId: user.id, details: { email: user.email, role: "owner" } });
    await writeAudit(tx, { ...actor, action: "api_key.created", targetType: "api_key", targetId: apiKey.id, details: { name: apiKey.name, prefix, scopes: apiKey.scopes } });
    return {
      tenant: { id: tenant.id, slug: tenant.slug, name: tenant.name },
      user: { id: user.id, email: user.email },
      firstKey: { key, apiKey: apiKeyView(apiKey) },
    };
  });
}
