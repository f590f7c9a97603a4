import { getOperatorDeps } from "@/server/api/deps";
import { operatorApiRoute } from "@/server/api/route";
import { setTenantSuspended } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const POST = operatorApiRoute("operatorResumeTenant", async ({ principal, params }) => ({
  status: 200,
  body: await setTenantSuspended(getOperatorDeps(), principal, params.id, null),
}));
