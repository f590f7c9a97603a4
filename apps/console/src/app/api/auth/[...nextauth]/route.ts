import NextAuth from "next-auth";
import { AppError } from "@tick/core";
import { getAuthLimits } from "@/server/api/deps";
import { clientAddress } from "@/server/api/route";
import { authOptions } from "@/server/auth";
import { getEnv } from "@/server/env";
import { problemResponse } from "@/server/problem";

export const dynamic = "force-dynamic";

type RouteContext = { params: Promise<{ nextauth: string[] }> };
// next-auth v4 declares NextAuth(options) as returning `any`; for the App Router it is this handler.
type AuthRouteHandler = (req: Request, ctx: RouteContext) => Promise<Response>;

// Built per request: options read config lazily, which `next build` must not need.
const nextAuth = (req: Request, ctx: RouteContext) => (NextAuth(authOptions()) as AuthRouteHandler)(req, ctx);

/** next-auth's session cookie (any prefix, any chunk) set to a value, not cleared. */
const setsSessionCookie = (res: Response) => res.headers.getSetCookie().some((c) => /^[^=;]*session-token(\.\d+)?=[^;]/.test(c));

/**
 * A password sign-in (POST /api/auth/callback/credentials) passes the sign-in limits first
 * (auth-limits.ts): every attempt counts against the client address; a failed one against the email and
 * the (email, address) pair; a successful one makes the pair known, so the owner, signing in from an
 * address they used before, is held to that pair's failures and not to what strangers elsewhere did to
 * the email. The 429 is problem+json with a `url` naming the error too, which next-auth's client reads.
 */
async function signInWithLimits(req: Request, ctx: RouteContext): Promise<Response> {
  const form = new URLSearchParams(await req.clone().text());
  const email = (form.get("email") ?? "").trim().toLowerCase();
  const address = clientAddress(req);
  const limits = getAuthLimits();
  try {
    if (email) await limits.admitSignIn(email, address);
    else await limits.hitAddress("signin", address);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const problem = problemResponse(err, new URL(req.url).pathname);
    const body = { ...((await problem.json()) as object), url: `${getEnv().NEXTAUTH_URL}/login?error=RateLimited` };
    return Response.json(body, { status: problem.status, headers: problem.headers });
  }
  const res = await nextAuth(req, ctx);
  if (!email) return res;
  const url = ((await res.clone().json().catch(() => ({}))) as { url?: string }).url ?? res.headers.get("location") ?? "";
  if (res.status === 401 || /[?&]error=/.test(url)) await limits.signInFailed(email, address);
  // Only a session cookie proves the password: a refused CSRF token, say, redirects without an error.
  else if (setsSessionCookie(res)) await limits.signInSucceeded(email, address);
  return res;
}

async function handler(req: Request, ctx: RouteContext): Promise<Response> {
  const { nextauth } = await ctx.params;
  if (req.method === "POST" && nextauth[0] === "callback" && nextauth[1] === "credentials") return signInWithLimits(req, ctx);
  return nextAuth(req, ctx);
}

export { handler as GET, handler as POST };
