import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { updateQueue } from "@/server/services/queues";

export const dynamic = "force-dynamic";

export const POST = apiRoute("resumeQueue", async ({ principal, params }) => ({
  status: 200,
  body: await updateQueue(getTenantServiceDeps(), principal, params.name, { paused: false }, "queue.resumed"),
}));
