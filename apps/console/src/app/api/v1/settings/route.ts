import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { getSettings, updateSettings } from "@/server/services/settings";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getSettings", async ({ principal }) => ({
  status: 200,
  body: await getSettings(getTenantServiceDeps(), principal.tenant.id),
}));

export const PATCH = apiRoute("updateSettings", async ({ principal, body }) => {
  return { status: 200, body: await updateSettings(getTenantServiceDeps(), principal, body) };
});
