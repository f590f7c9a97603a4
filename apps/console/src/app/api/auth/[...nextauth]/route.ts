import NextAuth from "next-auth";
import { authOptions } from "@/server/auth";

export const dynamic = "force-dynamic";

// Built per request: options read config lazily, which `next build` must not need.
const handler = (req: Request, ctx: { params: Promise<{ nextauth: string[] }> }) =>
  NextAuth(authOptions())(req, ctx);

export { handler as GET, handler as POST };
