import { getOperatorDeps } from "@/server/api/deps";
import { operatorApiRoute } from "@/server/api/route";
import { updateTenantLimits } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const PATCH = operatorApiRoute("operatorUpdateTenant", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateTenantLimits(getOperatorDeps(), principal, params.id, body),
}));
