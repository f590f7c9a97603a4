import { AppError } from "@tick/core";
import type { z } from "zod";
import type { AccountSession, changePasswordSchema } from "@tick/contract";
import { hashPassword, prismaTransaction, verifyPassword, type PrismaClient } from "@tick/db";
import type { Logger } from "@tick/runtime";
import { enforcePasswordPolicy } from "./password-policy";

/**
 * Server-side console sessions: every sign-in is a row in `sessions`, its id (`sid`) rides in the session
 * cookie (a next-auth JWT), and every request that reads the session checks the row. So a session ends for
 * good on sign-out, "sign out everywhere" or a password change, and after its idle or absolute lifetime,
 * whatever the cookie says. What the person may do in a tenant (memberships, suspension) is read fresh
 * beside it on every request (server/auth.ts: getConsoleUser).
 */
export interface SessionDeps {
  prisma: PrismaClient;
  logger: Logger;
  /** TICK_SESSION_MAX_AGE: a session's absolute lifetime. */
  maxAgeMs: number;
  /** TICK_SESSION_IDLE_TIMEOUT: a session without a request for this long is ended. */
  idleTimeoutMs: number;
  /** The clock (milliseconds since the epoch). */
  now: () => number;
}

/** Why a session was ended early (sessions.revoked_reason). */
export type SessionEndReason = "signed_out" | "signed_out_everywhere" | "password_changed" | "revoked";

/** A session's state for a request: only `active` is signed in. */
export type SessionState = "active" | "missing" | "revoked" | "expired" | "idle";

interface SessionTimes {
  revokedAt: Date | null;
  expiresAt: Date;
  lastSeenAt: Date;
}

/** The one rule for whether a session row still signs its person in. */
function sessionState(row: SessionTimes | null | undefined, idleTimeoutMs: number, now: number): SessionState {
  if (!row) return "missing";
  if (row.revokedAt) return "revoked";
  if (row.expiresAt.getTime() <= now) return "expired";
  if (row.lastSeenAt.getTime() + idleTimeoutMs <= now) return "idle";
  return "active";
}

/**
 * How stale last_seen_at may get before a request writes it: a minute, or a quarter of the idle lifetime
 * when that is shorter, so an active session never idles out between two writes.
 */
const touchIntervalMs = (idleTimeoutMs: number) => Math.min(60_000, Math.floor(idleTimeoutMs / 4));

/** Rows that still sign someone in, as a Prisma filter (the same rule as sessionState). */
const activeWhere = (deps: SessionDeps, now: number) => ({
  revokedAt: null,
  expiresAt: { gt: new Date(now) },
  lastSeenAt: { gt: new Date(now - deps.idleTimeoutMs) },
});

/** Ended sessions are kept this long (for nothing but a person's own "why was I signed out"), then deleted. */
const KEEP_ENDED_MS = 7 * 24 * 3_600_000;

/**
 * A sign-in: the row the session cookie will name. Also deletes the person's sessions that ended more than a
 * week ago, so the table holds about one sign-in's worth of rows per person and week.
 */
export async function startSession(deps: SessionDeps, userId: string, userAgent: string | null): Promise<string> {
  const now = deps.now();
  const row = await deps.prisma.session.create({
    data: { userId, createdAt: new Date(now), lastSeenAt: new Date(now), expiresAt: new Date(now + deps.maxAgeMs), userAgent: userAgent?.slice(0, 512) || null },
    select: { id: true },
  });
  const before = new Date(now - KEEP_ENDED_MS);
  deps.prisma.session
    .deleteMany({ where: { userId, OR: [{ expiresAt: { lt: before } }, { revokedAt: { lt: before } }, { lastSeenAt: { lt: new Date(before.getTime() - deps.idleTimeoutMs) } }] } })
    .catch((err: unknown) => deps.logger.warn({ err, userId }, "could not delete old console sessions"));
  deps.logger.info({ userId, sessionId: row.id }, "console session started");
  return row.id;
}

/**
 * Records a request of an active session: at most one write per touch interval (the statement is conditional
 * on the stored value being that old, so concurrent requests write once). Fire and forget: bookkeeping must
 * not fail or slow the request.
 */
function noteActivity(deps: SessionDeps, sessionId: string, lastSeenAt: Date, now: number): void {
  const interval = touchIntervalMs(deps.idleTimeoutMs);
  if (now - lastSeenAt.getTime() < interval) return;
  deps.prisma.session
    .updateMany({ where: { id: sessionId, revokedAt: null, lastSeenAt: { lte: new Date(now - interval) } }, data: { lastSeenAt: new Date(now) } })
    .catch((err: unknown) => deps.logger.debug({ err, sessionId }, "could not record a console session's activity"));
}

/**
 * The person a session cookie names, with their memberships and tenants, read with the session row in one
 * Prisma query: null unless the session is active (and then its activity is recorded).
 */
export async function readActiveSession(deps: SessionDeps, userId: string, sessionId: string) {
  const user = await deps.prisma.user.findUnique({
    where: { id: userId },
    include: {
      sessions: { where: { id: sessionId }, select: { id: true, revokedAt: true, expiresAt: true, lastSeenAt: true } },
      memberships: { include: { tenant: true }, orderBy: { createdAt: "asc" } },
    },
  });
  const now = deps.now();
  const session = user?.sessions[0];
  if (!user || !session || sessionState(session, deps.idleTimeoutMs, now) !== "active") return null;
  noteActivity(deps, session.id, session.lastSeenAt, now);
  return user;
}

/** The session row's state alone (next-auth's own /api/auth/session endpoint); records its activity when active. */
export async function checkSession(deps: SessionDeps, userId: string, sessionId: string): Promise<SessionState> {
  const row = await deps.prisma.session.findUnique({ where: { id: sessionId }, select: { userId: true, revokedAt: true, expiresAt: true, lastSeenAt: true } });
  const now = deps.now();
  const state = row?.userId === userId ? sessionState(row, deps.idleTimeoutMs, now) : "missing";
  if (state === "active") noteActivity(deps, sessionId, row!.lastSeenAt, now);
  return state;
}

/** Ends one session of this person; the number ended (0 when it had already ended). */
export async function endSession(deps: SessionDeps, userId: string, sessionId: string, reason: SessionEndReason): Promise<number> {
  const { count } = await deps.prisma.session.updateMany({
    where: { id: sessionId, userId, revokedAt: null },
    data: { revokedAt: new Date(deps.now()), revokedReason: reason },
  });
  if (count > 0) deps.logger.info({ userId, sessionId, reason }, "console session ended");
  return count;
}

/** One of the signed-in person's own sessions, ended from the Account page; someone else's is 404. */
export async function endOwnSession(deps: SessionDeps, userId: string, sessionId: string): Promise<{ ended: number }> {
  const ended = await endSession(deps, userId, sessionId, "revoked");
  if (ended === 0 && !(await deps.prisma.session.findFirst({ where: { id: sessionId, userId }, select: { id: true } }))) {
    throw new AppError("not_found", "No such session.");
  }
  return { ended };
}

/** Sign out everywhere: every active session of the person, the one asking included. */
export async function endAllSessions(deps: SessionDeps, userId: string): Promise<{ ended: number }> {
  const now = deps.now();
  const { count } = await deps.prisma.session.updateMany({
    where: { userId, ...activeWhere(deps, now) },
    data: { revokedAt: new Date(now), revokedReason: "signed_out_everywhere" },
  });
  deps.logger.info({ userId, ended: count }, "console sessions ended everywhere");
  return { ended: count };
}

/** The person's active sessions, most recently seen first; `current` marks the one asking. */
export async function listSessions(deps: SessionDeps, userId: string, currentSessionId: string): Promise<{ data: AccountSession[] }> {
  const rows = await deps.prisma.session.findMany({ where: { userId, ...activeWhere(deps, deps.now()) }, orderBy: { lastSeenAt: "desc" }, take: 100 });
  return {
    data: rows.map((r) => ({
      id: r.id,
      createdAt: r.createdAt.toISOString(),
      lastSeenAt: r.lastSeenAt.toISOString(),
      expiresAt: r.expiresAt.toISOString(),
      idleExpiresAt: new Date(Math.min(r.lastSeenAt.getTime() + deps.idleTimeoutMs, r.expiresAt.getTime())).toISOString(),
      userAgent: r.userAgent,
      current: r.id === currentSessionId,
    })),
  };
}

const fieldError = (path: string, message: string, detail: string) => new AppError("validation_failed", detail, { extra: { errors: [{ path, message }] } });

/**
 * A new password for the signed-in person, proven by the current one and held to the password policy (as a
 * sign-up's: services/password-policy.ts). In one transaction: the password is
 * replaced only if it is still the one just checked (a concurrent change wins alone: 409), and every other
 * active session of the person is ended; the one asking stays signed in.
 */
export async function changePassword(
  deps: SessionDeps,
  who: { userId: string; sessionId: string; email: string },
  input: z.output<typeof changePasswordSchema>,
): Promise<{ endedSessions: number }> {
  const user = await deps.prisma.user.findUnique({ where: { id: who.userId }, select: { passwordHash: true } });
  if (!user?.passwordHash || !(await verifyPassword(input.currentPassword, user.passwordHash))) {
    throw fieldError("currentPassword", "wrong password", "The current password is wrong.");
  }
  if (input.newPassword === input.currentPassword) {
    throw fieldError("newPassword", "must differ from the current password", "The new password is the current one.");
  }
  enforcePasswordPolicy(input.newPassword, [who.email], "newPassword");
  const passwordHash = await hashPassword(input.newPassword);
  const now = deps.now();
  const endedSessions = await prismaTransaction(deps.prisma, async (tx) => {
    const changed = await tx.user.updateMany({ where: { id: who.userId, passwordHash: user.passwordHash }, data: { passwordHash } });
    if (changed.count === 0) throw new AppError("conflict", "The password was changed by another request meanwhile. Sign in again with the new one.");
    const ended = await tx.session.updateMany({
      where: { userId: who.userId, id: { not: who.sessionId }, ...activeWhere(deps, now) },
      data: { revokedAt: new Date(now), revokedReason: "password_changed" },
    });
    return ended.count;
  });
  deps.logger.info({ userId: who.userId, endedSessions }, "password changed; the person's other console sessions ended");
  return { endedSessions };
}
