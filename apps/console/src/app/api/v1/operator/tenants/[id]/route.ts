import { getContext } from "@/server/context";
import { operatorApiRoute } from "@/server/api/route";
import { updateTenantLimits } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const PATCH = operatorApiRoute("operatorUpdateTenant", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateTenantLimits({ prisma: getContext().prisma }, principal, params.id, body),
}));
