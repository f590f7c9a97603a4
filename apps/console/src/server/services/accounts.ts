import { createHash, randomBytes, randomUUID } from "node:crypto";
import { AppError } from "@tick/core";
import type { z } from "zod";
import { slugify, type signUpSchema, type SignUpRequested } from "@tick/contract";
import { generateApiKey, hashPassword, prismaTransaction, shardForTenant, type PrismaClient } from "@tick/db";
import type { AuthLimits } from "../api/auth-limits";
import type { Mailer } from "../mailer";
import { writeAudit } from "./audit";
import { enforcePasswordPolicy } from "./password-policy";
import { apiKeyView } from "./views";

export type SignUpMode = "open" | "invite" | "closed";

/** What the account services need, wired once (server/api/deps.ts: getAccountDeps). */
export interface AccountDeps {
  prisma: PrismaClient;
  limits: AuthLimits;
  signUpMode: SignUpMode;
  shardCount: number;
  /** The console's public URL (NEXTAUTH_URL): confirmation links point there. */
  publicUrl: string;
  /** How long a confirmation link works (TICK_SIGNUP_TTL). */
  signUpTtlMs: number;
  /** The shared mail transport; never null while sign-up is open (the env schema refuses that). */
  mailer: Mailer | null;
  logger: { info: (obj: object, msg: string) => void; warn: (obj: object, msg: string) => void };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function requireOpen(deps: AccountDeps): void {
  if (deps.signUpMode !== "open") {
    throw new AppError(
      "signup_closed",
      deps.signUpMode === "invite" ? "Sign-up is by invitation only: ask a member of your team to invite you." : "Sign-up is closed on this deployment.",
    );
  }
}

const slugTaken = (slug: string) =>
  new AppError("conflict", `The tenant name "${slug}" is taken. Choose another.`, { extra: { errors: [{ path: "slug", message: "taken" }] } });

/**
 * Sign-up, step one: answers the same for every email, whether an account has it or not, so nobody can learn
 * from it which addresses have accounts. The status and body are the same, and so is the work done before
 * answering: the password is scrypt-hashed and a request row stored in both cases (the hash is used only if
 * the email has no account yet). What differs is the mail, sent after the answer and not awaited by it: a new
 * address is asked to confirm to create its tenant; an address with an account is told that someone asked to
 * add a tenant with it, to confirm if it was them. The tenant is made by verifySignup, with the link's token.
 *
 * Everything that refuses a request (TICK_SIGNUP, rate limits, the password policy, a taken slug) comes first
 * and depends on the request alone, never on the email's account.
 */
export async function signUp(deps: AccountDeps, input: z.output<typeof signUpSchema>, clientAddress: string): Promise<SignUpRequested> {
  requireOpen(deps);
  await deps.limits.hitAddress("signup", clientAddress);
  await deps.limits.checkEmail("signup", input.email);
  await deps.limits.hitEmail("signup", input.email);

  const slug = input.slug ?? slugify(input.tenantName);
  enforcePasswordPolicy(input.password, [input.email, input.email.split("@")[0]!, input.tenantName, slug]);
  if (await deps.prisma.tenant.findUnique({ where: { slug }, select: { id: true } })) throw slugTaken(slug);

  const [existing, passwordHash] = await Promise.all([
    deps.prisma.user.findUnique({ where: { email: input.email }, select: { id: true } }),
    hashPassword(input.password),
  ]);
  const token = randomBytes(32).toString("base64url");
  const expiresAt = new Date(Date.now() + deps.signUpTtlMs);
  const request = await deps.prisma.signupRequest.create({
    data: { email: input.email, tokenHash: sha256(token), passwordHash, name: input.name ?? null, tenantName: input.tenantName, slug, expiresAt },
    select: { id: true },
  });

  // For the platform's operators: who asked is an email hash (to correlate repeats), never the address or token.
  deps.logger.info(
    { signupRequestId: request.id, emailSha256: sha256(input.email).slice(0, 16), existingAccount: existing !== null, slug },
    existing ? "sign-up requested with the email of an existing account: its owner was mailed" : "sign-up requested: confirmation mailed",
  );
  const link = `${deps.publicUrl.replace(/\/$/, "")}/signup/verify#token=${token}`;
  const mail = signUpMail({ to: input.email, tenantName: input.tenantName, slug, link, expiresAt, existingAccount: existing !== null });
  // Not awaited: how long the mail takes (and whether it fails) must not show in the answer.
  void (deps.mailer?.send(mail) ?? Promise.reject(new Error("no mail transport (SMTP_URL or TICK_MAIL_DIR)"))).catch((err: unknown) => {
    deps.logger.warn({ err: err instanceof Error ? err.message : String(err), signupRequestId: request.id }, "sign-up email not sent");
  });

  return { status: "verification_sent", email: input.email, expiresAt: expiresAt.toISOString() };
}

function signUpMail(m: { to: string; tenantName: string; slug: string; link: string; expiresAt: Date; existingAccount: boolean }) {
  const expires = `The link works once, until ${m.expiresAt.toISOString().slice(0, 16).replace("T", " ")} UTC.`;
  if (m.existingAccount) {
    return {
      to: m.to,
      subject: `Add the tenant ${m.tenantName} to your Tick account?`,
      text:
        `Someone asked to create the tenant "${m.tenantName}" (${m.slug}) on Tick with your email address, which already ` +
        `has a Tick account.\n\n` +
        `If it was you, confirm to add the tenant to your account, with you as its owner, and get its first API key:\n` +
        `${m.link}\n\n` +
        `You keep signing in with your current password: the password given with this request is not used.\n\n` +
        `If it was not you, ignore this email: nothing is created and nothing about your account changes.\n\n${expires}\n`,
    };
  }
  return {
    to: m.to,
    subject: `Confirm your email to create ${m.tenantName} on Tick`,
    text:
      `Confirm your email address to create your tenant "${m.tenantName}" (${m.slug}) on Tick, with you as its owner, ` +
      `and get its first API key:\n${m.link}\n\n` +
      `If you did not sign up for Tick, ignore this email: nothing is created without the link.\n\n${expires}\n`,
  };
}

const invalidLink = () =>
  new AppError("not_found", "This confirmation link is not valid: it was used already or has expired. Sign in, or sign up again.");

/**
 * Sign-up, step two (the link's token): creates, in one transaction with its audit rows, the tenant with its
 * default queue, its owner and a first API key (scope admin, role owner), returned once. The owner is the
 * email's account when it has one (which keeps its own password: one person, several tenants), else a new
 * account with the password given at sign-up. Single use: the request is claimed by a conditional update
 * inside the transaction, so two confirmations of one link cannot both create a tenant. A used, expired or
 * unknown token is the same 404; a slug taken since the request is 409 (the link stays usable until it expires).
 */
export async function verifySignup(deps: AccountDeps, token: string, clientAddress: string) {
  requireOpen(deps);
  await deps.limits.hitAddress("signup", clientAddress);
  const request = await deps.prisma.signupRequest.findUnique({ where: { tokenHash: sha256(token) } });
  if (!request || request.completedAt || request.expiresAt.getTime() <= Date.now()) throw invalidLink();
  const { key, prefix, hash } = generateApiKey();
  const tenantId = randomUUID();
  const { slug } = request;

  return prismaTransaction(deps.prisma, async (tx) => {
    const claimed = await tx.signupRequest.updateMany({
      where: { id: request.id, completedAt: null, expiresAt: { gt: new Date() } },
      data: { completedAt: new Date() },
    });
    if (claimed.count !== 1) throw invalidLink();
    if (await tx.tenant.findUnique({ where: { slug }, select: { id: true } })) throw slugTaken(slug);
    const tenant = await tx.tenant
      .create({ data: { id: tenantId, slug, name: request.tenantName, shard: shardForTenant(tenantId, deps.shardCount), queues: { create: { name: "default" } } } })
      .catch((err: { code?: string }) => {
        // Two confirmations racing for one slug past the check above: the unique index decides.
        if (err.code === "P2002") throw slugTaken(slug);
        throw err;
      });
    const existing = await tx.user.findUnique({ where: { email: request.email } });
    const user =
      existing ??
      (await tx.user
        .create({ data: { email: request.email, name: request.name, passwordHash: request.passwordHash } })
        .catch((err: { code?: string }) => {
          // Another request for the same new email was confirmed at this instant: this one rolls back, unused.
          if (err.code === "P2002") throw new AppError("conflict", "This account was just created by another confirmation: open the link again.");
          throw err;
        }));
    await tx.membership.create({ data: { userId: user.id, tenantId, role: "owner" } });
    // The person lands in the tenant they just created.
    await tx.user.update({ where: { id: user.id }, data: { currentTenantId: tenantId } });
    const apiKey = await tx.apiKey.create({
      data: { tenantId, name: "First key", prefix, hash, scopes: ["admin"], role: "owner", createdBy: `user:${user.id}` },
    });
    const actor = { tenantId, actorType: "user" as const, actorId: user.id };
    await writeAudit(tx, { ...actor, action: "tenant.created", targetType: "tenant", targetId: tenantId, details: { slug, name: tenant.name, via: "signup" } });
    await writeAudit(tx, { ...actor, action: "member.added", targetType: "user", targetId: user.id, details: { email: user.email, role: "owner" } });
    await writeAudit(tx, {
      ...actor,
      action: "api_key.created",
      targetType: "api_key",
      targetId: apiKey.id,
      details: { name: apiKey.name, prefix, scopes: apiKey.scopes, role: apiKey.role },
    });
    return {
      tenant: { id: tenant.id, slug: tenant.slug, name: tenant.name },
      user: { id: user.id, email: user.email },
      firstKey: { key, apiKey: apiKeyView(apiKey) },
    };
  });
}

/**
 * The tenant switcher: remembers, on the person's row, which of their tenants the console shows, so it follows
 * them to another browser. Only a tenant they are a member of (false otherwise); the API re-checks the
 * membership on every request anyway.
 */
export async function rememberCurrentTenant({ prisma }: Pick<AccountDeps, "prisma">, user: { id: string; memberships: { tenantId: string }[] }, tenantId: string): Promise<boolean> {
  if (!user.memberships.some((m) => m.tenantId === tenantId)) return false;
  await prisma.user.update({ where: { id: user.id }, data: { currentTenantId: tenantId } });
  return true;
}
