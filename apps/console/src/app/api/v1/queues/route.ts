import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createQueue, listQueues } from "@/server/services/queues";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listQueues", async ({ principal }) => ({
  status: 200,
  body: { data: await listQueues(getTenantServiceDeps(), principal.tenant.id) },
}));

export const POST = apiRoute("createQueue", async ({ principal, body }) => ({
  status: 201,
  body: await createQueue(getTenantServiceDeps(), principal, body),
}));
