import { getContext } from "@/server/context";
import { operatorApiRoute } from "@/server/api/route";
import { setTenantSuspended } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const POST = operatorApiRoute("operatorResumeTenant", async ({ principal, params }) => ({
  status: 200,
  body: await setTenantSuspended({ prisma: getContext().prisma }, principal, params.id, null),
}));
