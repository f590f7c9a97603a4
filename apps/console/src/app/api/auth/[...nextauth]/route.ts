import NextAuth from "next-auth";
import { authOptions } from "@/server/auth";

export const dynamic = "force-dynamic";

type RouteContext = { params: Promise<{ nextauth: string[] }> };
// next-auth v4 declares NextAuth(options) as returning `any`; for the App Router it is this handler.
type AuthRouteHandler = (req: Request, ctx: RouteContext) => Promise<Response>;

// Built per request: options read config lazily, which `next build` must not need.
const handler = (req: Request, ctx: RouteContext) => (NextAuth(authOptions()) as AuthRouteHandler)(req, ctx);

export { handler as GET, handler as POST };
