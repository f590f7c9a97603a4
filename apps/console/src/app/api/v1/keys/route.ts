import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createApiKey, listApiKeys } from "@/server/services/keys";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listApiKeys", async ({ principal }) => ({
  status: 200,
  body: { data: await listApiKeys(getTenantServiceDeps(), principal.tenant.id) },
}));

export const POST = apiRoute("createApiKey", async ({ principal, body }) => ({
  status: 201,
  body: await createApiKey(getTenantServiceDeps(), principal, body),
}));
