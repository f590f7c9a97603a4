import { createHash, randomBytes } from "node:crypto";
import { AppError } from "@tick/core";
import type { z } from "zod";
import { hasScope, type acceptInvitationSchema, type ConsoleRole, type createInvitationSchema, type Invitation, type Member } from "@tick/contract";
import { hashPassword, prismaTransaction, sql, verifyPassword, type PrismaClient, type Queryable } from "@tick/db";
import { auditActor, requireRole, type ApiPrincipal } from "../api/authenticate";
import type { AuthLimits } from "../api/auth-limits";
import { writeAudit } from "./audit";
import { enforcePasswordPolicy } from "./password-policy";
import type { SignUpMode } from "./accounts";

/** Sends an invitation link by email (SMTP_URL set), or null when there is no mail server. */
export type InvitationMailer = ((message: { to: string; tenantName: string; role: ConsoleRole; acceptUrl: string; invitedBy: string }) => Promise<void>) | null;

export interface MemberDeps {
  prisma: PrismaClient;
  pool: Queryable;
  limits: AuthLimits;
  signUpMode: SignUpMode;
  /** The console's public URL (NEXTAUTH_URL): invitation links point there. */
  publicUrl: string;
  invitationTtlMs: number;
  mailer: InvitationMailer;
  logger: { warn: (obj: object, msg: string) => void };
}

type InvitationRow = {
  id: string;
  email: string;
  role: ConsoleRole;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
};

const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");

function invitationView(row: InvitationRow, inviterEmail: string): Invitation {
  const state = row.acceptedAt ? "accepted" : row.revokedAt ? "revoked" : row.expiresAt.getTime() <= Date.now() ? "expired" : "pending";
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    state,
    invitedBy: inviterEmail,
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    acceptedAt: row.acceptedAt?.toISOString() ?? null,
  };
}

const memberView = (m: { userId: string; role: ConsoleRole; createdAt: Date; user: { email: string; name: string | null } }): Member => ({
  userId: m.userId,
  email: m.user.email,
  name: m.user.name,
  role: m.role,
  joinedAt: m.createdAt.toISOString(),
});

/**
 * Who invited, by name: a person's email, or an API key's name and prefix (invitations made over REST).
 * The same lookup as the audit log's actor names (sql.actorNameRows), keys looked up in this tenant only.
 */
async function emailsOf(deps: Pick<MemberDeps, "pool">, tenantId: string, ids: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(ids)];
  const rows = await sql.actorNameRows(deps.pool, { userIds: unique, keyIds: unique, tenantId });
  return new Map(rows.map((r) => [r.id, r.kind === "api_key" ? `API key ${r.name}` : r.name]));
}

export async function listMembers(deps: MemberDeps, tenantId: string) {
  const [members, invitations] = await Promise.all([
    deps.prisma.membership.findMany({ where: { tenantId }, include: { user: true }, orderBy: { createdAt: "asc" } }),
    deps.prisma.invitation.findMany({ where: { tenantId }, orderBy: { createdAt: "desc" }, take: 200 }),
  ]);
  const inviters = await emailsOf(deps, tenantId, invitations.map((i) => i.invitedBy));
  return { data: members.map(memberView), invitations: invitations.map((i) => invitationView(i, inviters.get(i.invitedBy) ?? "a former member")) };
}

/**
 * Invites someone by email with a role: a random token, of which only the SHA-256 is stored, in a link
 * shown once to the inviter (and mailed when SMTP is configured). The link carries the token in its
 * fragment, which browsers never send to a server, so it stays out of access logs.
 */
export async function inviteMember(deps: MemberDeps, principal: ApiPrincipal, input: z.output<typeof createInvitationSchema>) {
  if (input.role === "owner") requireRole(principal, "owners:manage", "Only an owner can invite an owner.");
  const already = await deps.prisma.membership.findFirst({ where: { tenantId: principal.tenant.id, user: { email: input.email } } });
  if (already) throw new AppError("conflict", `${input.email} is already a member.`, { extra: { errors: [{ path: "email", message: "already a member" }] } });
  const token = randomBytes(32).toString("base64url");
  const { row, tenantName } = await prismaTransaction(deps.prisma, async (tx) => {
    const tenant = await tx.tenant.findUniqueOrThrow({ where: { id: principal.tenant.id }, select: { name: true } });
    const row = await tx.invitation.create({
      data: {
        tenantId: principal.tenant.id,
        email: input.email,
        role: input.role,
        tokenHash: tokenHash(token),
        // A person, or the API key that asked (named as such in listings).
        invitedBy: principal.actor.id,
        expiresAt: new Date(Date.now() + deps.invitationTtlMs),
      },
    });
    await writeAudit(tx, { ...auditActor(principal), action: "member.invited", targetType: "invitation", targetId: row.id, details: { email: row.email, role: row.role } });
    return { row, tenantName: tenant.name };
  });
  const acceptUrl = `${deps.publicUrl.replace(/\/$/, "")}/invite#token=${token}`;
  const inviter = (await emailsOf(deps, principal.tenant.id, [principal.actor.id])).get(principal.actor.id) ?? "a member";
  let emailed = false;
  if (deps.mailer) {
    try {
      await deps.mailer({ to: row.email, tenantName, role: row.role, acceptUrl, invitedBy: inviter });
      emailed = true;
    } catch (err) {
      // The link is still shown to the inviter, who can send it another way.
      deps.logger.warn({ err: (err as Error).message, invitationId: row.id }, "invitation email not sent");
    }
  }
  return { invitation: invitationView(row, inviter), acceptUrl, emailed };
}

export async function revokeInvitation(deps: MemberDeps, principal: ApiPrincipal, id: string) {
  return prismaTransaction(deps.prisma, async (tx) => {
    const row = await tx.invitation.findFirst({ where: { id, tenantId: principal.tenant.id } });
    if (!row) throw new AppError("not_found", "No such invitation.");
    let current = row;
    if (!row.acceptedAt && !row.revokedAt) {
      current = await tx.invitation.update({ where: { id }, data: { revokedAt: new Date() } });
      await writeAudit(tx, { ...auditActor(principal), action: "invitation.revoked", targetType: "invitation", targetId: id, details: { email: row.email } });
    }
    return invitationView(current, (await emailsOf(deps, principal.tenant.id, [row.invitedBy])).get(row.invitedBy) ?? "a former member");
  });
}

/**
 * Changes a member's role, or removes them. Owners are the tenant's last word: only an owner may make,
 * unmake or remove one, and the last owner can be neither demoted nor removed (409). The owner count is
 * read under a lock on the tenant's owner rows, so two demotions racing cannot both pass.
 */
async function changeMembership(deps: MemberDeps, principal: ApiPrincipal, userId: string, change: { role: ConsoleRole } | "remove") {
  const self = principal.actor.type === "user" && principal.actor.id === userId;
  // Leaving needs no more than membership; every other change needs members:write.
  if (!(change === "remove" && self) && !hasScope(principal.scopes, "members:write")) {
    throw new AppError("forbidden", principal.actor.type === "api_key" ? "This API key lacks the members:write scope." : "Your role does not allow this (it needs members:write).");
  }
  return prismaTransaction(deps.prisma, async (tx) => {
    const owners = await sql.lockTenantOwners(tx, principal.tenant.id);
    const member = await tx.membership.findUnique({ where: { userId_tenantId: { userId, tenantId: principal.tenant.id } }, include: { user: true } });
    if (!member) throw new AppError("not_found", "No such member.");
    const touchesOwner = member.role === "owner" || (change !== "remove" && change.role === "owner");
    // An owner leaving needs no owner's say (the last-owner rule below still holds).
    if (touchesOwner && !(self && change === "remove")) requireRole(principal, "owners:manage", "Only an owner can make, change or remove an owner.");
    const losesOwner = member.role === "owner" && (change === "remove" || change.role !== "owner");
    if (losesOwner && owners.length <= 1) {
      throw new AppError("conflict", "The last owner cannot be removed or demoted: make someone else an owner first.");
    }
    if (change === "remove") {
      await tx.membership.delete({ where: { id: member.id } });
      // The keys they made belong to the tenant and keep working, but never as an owner's.
      const keysLowered = await sql.capKeysMadeBy(tx, principal.tenant.id, userId, "admin");
      await writeAudit(tx, { ...auditActor(principal), action: self ? "member.left" : "member.removed", targetType: "user", targetId: userId, details: { email: member.user.email, role: member.role, keysLowered } });
      return memberView(member);
    }
    if (member.role === change.role) return memberView(member);
    const updated = await tx.membership.update({ where: { id: member.id }, data: { role: change.role }, include: { user: true } });
    // A key never keeps more than its maker may now do.
    const keysLowered = await sql.capKeysMadeBy(tx, principal.tenant.id, userId, change.role);
    await writeAudit(tx, { ...auditActor(principal), action: "member.role_changed", targetType: "user", targetId: userId, details: { email: member.user.email, from: member.role, to: change.role, keysLowered } });
    return memberView(updated);
  });
}

export const updateMember = (deps: MemberDeps, principal: ApiPrincipal, userId: string, role: ConsoleRole) => changeMembership(deps, principal, userId, { role });
export const removeMember = (deps: MemberDeps, principal: ApiPrincipal, userId: string) => changeMembership(deps, principal, userId, "remove");

async function pendingInvitation(deps: MemberDeps, token: string) {
  const row = await deps.prisma.invitation.findUnique({ where: { tokenHash: tokenHash(token) }, include: { tenant: true } });
  // Used, revoked, expired or unknown: one answer, so a token's history is not disclosed.
  if (!row || row.acceptedAt || row.revokedAt || row.expiresAt.getTime() <= Date.now()) {
    throw new AppError("not_found", "This invitation link is not valid: it was used, revoked or has expired. Ask for a new one.");
  }
  return row;
}

export async function previewInvitation(deps: MemberDeps, token: string, clientAddress: string) {
  await deps.limits.hitAddress("signup", clientAddress);
  const row = await pendingInvitation(deps, token);
  const account = await deps.prisma.user.findUnique({ where: { email: row.email }, select: { id: true } });
  return {
    tenant: { id: row.tenant.id, slug: row.tenant.slug, name: row.tenant.name },
    email: row.email,
    role: row.role,
    expiresAt: row.expiresAt.toISOString(),
    accountExists: account !== null,
  };
}

/**
 * Accepts an invitation: single use (the row is claimed with a conditional update inside the transaction
 * that adds the membership, so two accepts of one link cannot both join). A new account needs sign-up to
 * be open or by invitation; an existing one proves itself with its password.
 */
export async function acceptInvitation(deps: MemberDeps, input: z.output<typeof acceptInvitationSchema>, clientAddress: string) {
  await deps.limits.hitAddress("signup", clientAddress);
  const row = await pendingInvitation(deps, input.token);
  await deps.limits.checkEmail("signin", row.email);
  const existing = await deps.prisma.user.findUnique({ where: { email: row.email } });
  if (existing) {
    if (!existing.passwordHash || !(await verifyPassword(input.password, existing.passwordHash))) {
      await deps.limits.hitEmail("signin", row.email);
      throw new AppError("conflict", `An account for ${row.email} exists: enter its password to join.`, { extra: { errors: [{ path: "password", message: "wrong password" }] } });
    }
  } else if (deps.signUpMode === "closed") {
    throw new AppError("signup_closed", "New accounts cannot be created on this deployment.");
  }
  // A new account's password follows the policy; an existing account only proves the password it has.
  if (!existing) enforcePasswordPolicy(input.password, [row.email, row.email.split("@")[0]!, row.tenant.name, row.tenant.slug]);
  const passwordHash = existing ? null : await hashPassword(input.password);
  return prismaTransaction(deps.prisma, async (tx) => {
    const claimed = await tx.invitation.updateMany({
      where: { id: row.id, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
      data: { acceptedAt: new Date() },
    });
    if (claimed.count !== 1) throw new AppError("not_found", "This invitation link is not valid: it was used, revoked or has expired. Ask for a new one.");
    const user = existing ?? (await tx.user.create({ data: { email: row.email, name: input.name ?? null, passwordHash } }));
    await tx.invitation.update({ where: { id: row.id }, data: { acceptedBy: user.id } });
    const member = await tx.membership.findUnique({ where: { userId_tenantId: { userId: user.id, tenantId: row.tenantId } } });
    if (!member) await tx.membership.create({ data: { userId: user.id, tenantId: row.tenantId, role: row.role } });
    // The person lands in the tenant they just joined.
    await tx.user.update({ where: { id: user.id }, data: { currentTenantId: row.tenantId } });
    await writeAudit(tx, { tenantId: row.tenantId, actorType: "user", actorId: user.id, action: "member.joined", targetType: "invitation", targetId: row.id, details: { email: row.email, role: row.role } });
    return { tenant: { id: row.tenant.id, slug: row.tenant.slug, name: row.tenant.name }, user: { id: user.id, email: user.email }, role: row.role };
  });
}
