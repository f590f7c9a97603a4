import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { getQueue, updateQueue } from "@/server/services/queues";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getQueue", async ({ principal, params }) => ({
  status: 200,
  body: await getQueue(getTenantServiceDeps(), principal.tenant.id, params.name),
}));

export const PATCH = apiRoute("updateQueue", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateQueue(getTenantServiceDeps(), principal, params.name, body, "queue.updated"),
}));
