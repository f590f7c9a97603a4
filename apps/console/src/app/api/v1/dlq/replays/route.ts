import { getServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createReplay, listReplays } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const POST = apiRoute("createDlqReplay", async ({ principal, body }) => createReplay(getServiceDeps(), principal, body));

export const GET = apiRoute("listDlqReplays", async ({ principal, query }) => ({
  status: 200,
  body: await listReplays(getServiceDeps(), principal.tenant.id, query),
}));
