import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { updateQueue } from "@/server/services/queues";

export const dynamic = "force-dynamic";

export const POST = apiRoute("pauseQueue", async ({ principal, params }) => ({
  status: 200,
  body: await updateQueue(getContext().prisma, principal, params.name, { paused: true }, "queue.paused"),
}));
