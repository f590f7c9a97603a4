import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listFlowKeys } from "@/server/services/flow-keys";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listFlowKeys", async ({ principal, params, query }) => ({
  status: 200,
  body: await listFlowKeys(getTenantServiceDeps(), principal.tenant.id, params.name, query),
}));
