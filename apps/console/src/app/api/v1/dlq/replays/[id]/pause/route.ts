import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { changeReplay } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const POST = apiRoute("pauseDlqReplay", async ({ principal, params }) => ({
  status: 200,
  body: await changeReplay(getContext().pool, principal, params.id, "pause"),
}));
