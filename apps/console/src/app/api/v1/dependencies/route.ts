import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listDependencies } from "@/server/services/dependencies";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listDependencies", async ({ principal }) => ({
  status: 200,
  body: { data: await listDependencies(getTenantServiceDeps(), principal.tenant.id) },
}));
