import { getContext } from "@/server/context";
import { operatorApiRoute } from "@/server/api/route";
import { listTenants } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const GET = operatorApiRoute("operatorListTenants", async ({ query }) => ({ status: 200, body: await listTenants({ prisma: getContext().prisma }, query) }));
