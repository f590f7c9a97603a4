import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { getReplay } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getDlqReplay", async ({ principal, params }) => ({
  status: 200,
  body: await getReplay(getTenantServiceDeps(), principal.tenant.id, params.id),
}));
