import { randomBytes } from "node:crypto";
import { cookies } from "next/headers";
import type { NextAuthOptions, User } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { getToken, type JWT } from "next-auth/jwt";
import { hashPassword, verifyPassword } from "@tick/db";
import { getSessionDeps } from "./api/deps";
import { getContext } from "./context";
import { findBadParameters } from "./api/input-hygiene";
import { getEnv } from "./env";
import { checkSession, endSession, readActiveSession, startSession, type SessionState } from "./services/sessions";

import type { ConsoleRole } from "@tick/contract";

export interface ConsoleMembership {
  tenantId: string;
  tenantSlug: string;
  tenantName: string;
  role: ConsoleRole;
  /** A platform operator suspended the tenant: its API answers 403 tenant-suspended, its jobs wait. */
  suspended: boolean;
}

/** Session user as the console sees it: who, and which tenants with which role. */
export interface ConsoleUser {
  id: string;
  email: string;
  name: string | null;
  /** The server-side session (a `sessions` row) this request is signed in with. */
  sessionId: string;
  memberships: ConsoleMembership[];
  /** The tenant the console shows: the one last switched to, while still a member; else the first. */
  current: ConsoleMembership | undefined;
  /** Runs the SaaS (operator pages and API); not a tenant role. */
  platformOperator: boolean;
}

/** Thrown by the jwt callback for a token whose session row no longer signs anyone in: next-auth then answers "no session" and clears the cookie. */
class SessionEndedError extends Error {
  override readonly name = "SessionEndedError";
  constructor(readonly state: SessionState) {
    super(`the console session is ${state}`);
  }
}

/** What authorize() hands the jwt callback at sign-in. */
type SignedInUser = User & { userAgent: string | null };

let dummyHash: Promise<string> | undefined;
/**
 * A password hash of a secret no one knows, made once per process: a sign-in for an email without an account
 * (or without a password) is checked against it, so it costs the same scrypt work as a wrong password for a
 * real account and its answer's timing does not tell which emails have accounts.
 */
const dummyPasswordHash = () => (dummyHash ??= hashPassword(randomBytes(32).toString("base64url")));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The user and session ids a session token names; undefined when it names no server-side session (tokens issued before sessions were kept). */
function sessionOf(token: JWT | null): { userId: string; sessionId: string } | undefined {
  const sessionId = token?.sid;
  if (typeof token?.sub !== "string" || typeof sessionId !== "string" || !UUID.test(token.sub) || !UUID.test(sessionId)) return undefined;
  return { userId: token.sub, sessionId };
}

export function authOptions(): NextAuthOptions {
  const env = getEnv();
  // Started before the first credentials arrive (the sign-in form asks for a CSRF token first).
  void dummyPasswordHash();
  return {
    secret: env.NEXTAUTH_SECRET,
    // The cookie (and the JWT in it) lasts the session's absolute lifetime; the session row decides before that.
    session: { strategy: "jwt", maxAge: Math.max(1, Math.floor(env.TICK_SESSION_MAX_AGE / 1000)) },
    pages: { signIn: "/login" },
    providers: [
      CredentialsProvider({
        name: "Email and password",
        credentials: { email: { label: "Email", type: "email" }, password: { label: "Password", type: "password" } },
        async authorize(credentials, req): Promise<SignedInUser | null> {
          const email = credentials?.email?.trim().toLowerCase();
          const password = credentials?.password ?? "";
          if (!email || !password) return null;
          // An email Postgres cannot hold (a NUL, a lone surrogate) names no account: the same answer, the same work.
          if (findBadParameters([["email", email]]).length > 0) {
            await verifyPassword(password, await dummyPasswordHash());
            return null;
          }
          const user = await getContext()
            .prisma.user.findUnique({ where: { email } })
            .catch((err: unknown) => {
              // next-auth puts a thrown error's message in the redirect URL: never the driver's words.
              getContext().logger.error({ err }, "sign-in: reading the account failed");
              throw new Error("Sign-in is unavailable right now; try again.");
            });
          // The same scrypt work whether or not the account exists (or has a password).
          const matches = await verifyPassword(password, user?.passwordHash ?? (await dummyPasswordHash()));
          if (!user?.passwordHash || !matches) return null;
          const userAgent = (req.headers as Record<string, string | undefined> | undefined)?.["user-agent"] ?? null;
          return { id: user.id, email: user.email, name: user.name, userAgent };
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) {
          // A sign-in: its server-side session, named in the token.
          token.sub = user.id;
          token.sid = await startSession(getSessionDeps(), user.id, (user as SignedInUser).userAgent);
          return token;
        }
        // next-auth reading its own session (GET /api/auth/session): only while the row is active.
        const session = sessionOf(token);
        const state = session ? await checkSession(getSessionDeps(), session.userId, session.sessionId) : "missing";
        if (state !== "active") throw new SessionEndedError(state);
        return token;
      },
      async session({ session, token }) {
        if (session.user && token.sub) (session.user as { id?: string }).id = token.sub;
        return session;
      },
    },
    events: {
      async signOut({ token }) {
        const session = sessionOf(token);
        if (session) await endSession(getSessionDeps(), session.userId, session.sessionId, "signed_out");
      },
    },
    // next-auth's own messages go to the console's JSON log; an ended session is routine, not an error.
    logger: {
      error(code, metadata) {
        const err = metadata instanceof Error ? metadata : metadata.error;
        if (err instanceof SessionEndedError) {
          getContext().logger.info({ state: err.state }, "refused an ended console session");
          return;
        }
        getContext().logger.error({ code, err }, "next-auth error");
      },
      warn(code) {
        getContext().logger.warn({ code }, "next-auth warning");
      },
      debug() {},
    },
  };
}

/** The session token of this request's cookie, decoded and verified (null when absent, forged or past its JWT expiry). */
async function readSessionToken(): Promise<JWT | null> {
  const env = getEnv();
  const jar = await cookies();
  return getToken({
    // getToken reads the cookies (joining a chunked token) and nothing else: no Authorization header here.
    req: { cookies: Object.fromEntries(jar.getAll().map((c) => [c.name, c.value])), headers: {} } as unknown as Parameters<typeof getToken>[0]["req"],
    secret: env.NEXTAUTH_SECRET,
    secureCookie: env.NEXTAUTH_URL.startsWith("https://"),
  });
}

/**
 * The signed-in user, checked against their server-side session on every request: a token whose session
 * row is missing, ended (signed out, signed out everywhere, password changed), past its absolute lifetime
 * or idle past the idle lifetime signs no one in, and neither does a token without a session id. The
 * memberships are read fresh with the session row, so a revoked membership, a changed role or a suspended
 * tenant take effect at once (the JWT carries only the user and session ids).
 */
export async function getConsoleUser(): Promise<ConsoleUser | null> {
  const session = sessionOf(await readSessionToken());
  if (!session) return null;
  const user = await readActiveSession(getSessionDeps(), session.userId, session.sessionId);
  if (!user) return null;
  const memberships = user.memberships.map((m) => ({
    tenantId: m.tenantId,
    tenantSlug: m.tenant.slug,
    tenantName: m.tenant.name,
    role: m.role,
    suspended: m.tenant.suspendedAt !== null,
  }));
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    sessionId: session.sessionId,
    memberships,
    current: memberships.find((m) => m.tenantId === user.currentTenantId) ?? memberships[0],
    // Set by `npm run tick -- operator add <email>` (the user's row) or by config (TICK_OPERATOR_EMAILS).
    platformOperator: user.platformOperator || getEnv().TICK_OPERATOR_EMAILS.includes(user.email),
  };
}
