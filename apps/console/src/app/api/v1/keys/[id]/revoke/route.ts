import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { revokeApiKey } from "@/server/services/keys";

export const dynamic = "force-dynamic";

export const POST = apiRoute("revokeApiKey", async ({ principal, params }) => ({
  status: 200,
  body: await revokeApiKey(getTenantServiceDeps(), principal, params.id),
}));
