import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getQueue, updateQueue } from "@/server/services/queues";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getQueue", async ({ principal, params }) => ({
  status: 200,
  body: await getQueue(getContext().prisma, principal.tenant.id, params.name),
}));

export const PATCH = apiRoute("updateQueue", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateQueue(getContext().prisma, principal, params.name, body, "queue.updated"),
}));
