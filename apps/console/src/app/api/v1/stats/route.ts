import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { getStats } from "@/server/services/stats";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getStats", async ({ principal, query }) => ({
  status: 200,
  body: await getStats(getTenantServiceDeps(), principal.tenant.id, query.window),
}));
