import { getOperatorDeps } from "@/server/api/deps";
import { operatorApiRoute } from "@/server/api/route";
import { listTenants } from "@/server/services/operators";

export const dynamic = "force-dynamic";

export const GET = operatorApiRoute("operatorListTenants", async ({ query }) => ({ status: 200, body: await listTenants(getOperatorDeps(), query) }));
