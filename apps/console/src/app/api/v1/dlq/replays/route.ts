import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createReplay, listReplays } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const POST = apiRoute("createDlqReplay", async ({ principal, body }) => createReplay(getTenantServiceDeps(), principal, body));

export const GET = apiRoute("listDlqReplays", async ({ principal, query }) => ({
  status: 200,
  body: await listReplays(getTenantServiceDeps(), principal.tenant.id, query),
}));
