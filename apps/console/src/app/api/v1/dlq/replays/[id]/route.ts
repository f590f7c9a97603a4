import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { getReplay } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getDlqReplay", async ({ principal, params }) => ({
  status: 200,
  body: await getReplay(getContext().pool, principal.tenant.id, params.id),
}));
