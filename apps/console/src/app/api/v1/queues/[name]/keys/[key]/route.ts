import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { deleteFlowKey, getFlowKey, putFlowKey } from "@/server/services/flow-keys";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getFlowKey", async ({ principal, params }) => ({
  status: 200,
  body: await getFlowKey(getTenantServiceDeps(), principal.tenant.id, params.name, params.key),
}));

export const PUT = apiRoute("putFlowKey", async ({ principal, params, body }) => ({
  status: 200,
  body: await putFlowKey(getTenantServiceDeps(), principal, params.name, params.key, body),
}));

export const DELETE = apiRoute("deleteFlowKey", async ({ principal, params }) => ({
  status: 200,
  body: await deleteFlowKey(getTenantServiceDeps(), principal, params.name, params.key),
}));
