import type { NextAuthOptions } from "next-auth";
import CredentialsProvider from "next-auth/providers/credentials";
import { getServerSession } from "next-auth";
import { verifyPassword } from "@tick/db";
import { getContext } from "./context";
import { getEnv } from "./env";

import type { ConsoleRole } from "@tick/contract";

export type { ConsoleRole };

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
  memberships: ConsoleMembership[];
  /** The tenant the console shows: the one last switched to, while still a member; else the first. */
  current: ConsoleMembership | undefined;
  /** Runs the SaaS (operator pages and API); not a tenant role. */
  platformOperator: boolean;
}

export function authOptions(): NextAuthOptions {
  return {
    secret: getEnv().NEXTAUTH_SECRET,
    session: { strategy: "jwt", maxAge: 8 * 60 * 60 },
    pages: { signIn: "/login" },
    providers: [
      CredentialsProvider({
        name: "Email and password",
        credentials: { email: { label: "Email", type: "email" }, password: { label: "Password", type: "password" } },
        async authorize(credentials) {
          const email = credentials?.email?.trim().toLowerCase();
          const password = credentials?.password ?? "";
          if (!email || !password) return null;
          const user = await getContext().prisma.user.findUnique({ where: { email } });
          // Same work whether or not the user exists would be better; scrypt dominates either way.
          if (!user?.passwordHash || !(await verifyPassword(password, user.passwordHash))) return null;
          return { id: user.id, email: user.email, name: user.name };
        },
      }),
    ],
    callbacks: {
      async jwt({ token, user }) {
        if (user) token.sub = user.id;
        return token;
      },
      async session({ session, token }) {
        if (session.user && token.sub) (session.user as { id?: string }).id = token.sub;
        return session;
      },
    },
  };
}

/**
 * The signed-in user with memberships read fresh from the database on each request, so a revoked
 * membership or a changed role takes effect at once (the JWT carries only the user id).
 */
export async function getConsoleUser(): Promise<ConsoleUser | null> {
  const session = await getServerSession(authOptions());
  const id = (session?.user as { id?: string } | undefined)?.id;
  if (!id) return null;
  const user = await getContext().prisma.user.findUnique({
    where: { id },
    include: { memberships: { include: { tenant: true }, orderBy: { createdAt: "asc" } } },
  });
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
    memberships,
    current: memberships.find((m) => m.tenantId === user.currentTenantId) ?? memberships[0],
    // Set by `npm run tick -- operator add <email>` (the user's row) or by config (TICK_OPERATOR_EMAILS).
    platformOperator: user.platformOperator || getEnv().TICK_OPERATOR_EMAILS.includes(user.email),
  };
}
