import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listDeadJobs } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listDeadJobs", async ({ principal, query }) => ({
  status: 200,
  body: await listDeadJobs(getTenantServiceDeps(), principal.tenant.id, query),
}));
