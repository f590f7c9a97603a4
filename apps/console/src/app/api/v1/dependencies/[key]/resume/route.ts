import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { setDependencyPaused } from "@/server/services/dependencies";

export const dynamic = "force-dynamic";

export const POST = apiRoute("resumeDependency", async ({ principal, params }) => ({
  status: 200,
  body: await setDependencyPaused(getTenantServiceDeps(), principal, params.key, false),
}));
