import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { changeReplay } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const POST = apiRoute("pauseDlqReplay", async ({ principal, params }) => ({
  status: 200,
  body: await changeReplay(getTenantServiceDeps(), principal, params.id, "pause"),
}));
