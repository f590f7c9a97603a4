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

/**
 * A password sign-in (POST /api/auth/callback/credentials) passes the sign-in limits first (issue #19):
 * every attempt counts against the client address, and a failed one against the email, so guessing gets
 * 429 for the rest of the window while the real user's successful sign-in never fills the email's count.
 * The 429 is problem+json with a `url` naming the error too, which next-auth's client reads.
 */
async function signInWithLimits(req: Request, ctx: RouteContext): Promise<Response> {
  const form = new URLSearchParams(await req.clone().text());
  const email = (form.get("email") ?? "").trim().toLowerCase();
  const limits = getAuthLimits();
  try {
    await limits.hitAddress("signin", clientAddress(req));
    if (email) await limits.checkEmail("signin", email);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const problem = problemResponse(err, new URL(req.url).pathname);
    const body = { ...((await problem.json()) as object), url: `${getEnv().NEXTAUTH_URL}/login?error=RateLimited` };
    return Response.json(body, { status: problem.status, headers: problem.headers });
  }
  const res = await nextAuth(req, ctx);
  const failed = res.status === 401 || /[?&]error=/.test(((await res.clone().json().catch(() => ({}))) as { url?: string }).url ?? res.headers.get("location") ?? "");
  if (failed && email) await limits.hitEmail("signin", email);
  return res;
}

async function handler(req: Request, ctx: RouteContext): Promise<Response> {
  const { nextauth } = await ctx.params;
  if (req.method === "POST" && nextauth[0] === "callback" && nextauth[1] === "credentials") return signInWithLimits(req, ctx);
  return nextAuth(req, ctx);
}

export { handler as GET, handler as POST };
