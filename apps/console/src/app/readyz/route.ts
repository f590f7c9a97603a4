import { checkReadiness } from "@/server/health";

export const dynamic = "force-dynamic";

/** Readiness: the database and Redis answer. */
export async function GET(): Promise<Response> {
  const failed = await checkReadiness();
  const ok = Object.keys(failed).length === 0;
  return Response.json(ok ? { status: "ready" } : { status: "not_ready", failed }, {
    status: ok ? 200 : 503,
    headers: { "cache-control": "no-store" },
  });
}
