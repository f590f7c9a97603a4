import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { createReplay, listReplays } from "@/server/services/replays";

export const dynamic = "force-dynamic";

export const POST = apiRoute("createDlqReplay", async ({ principal, body }) => {
  const { pool, prisma } = getContext();
  return createReplay(pool, prisma, principal, body);
});

export const GET = apiRoute("listDlqReplays", async ({ principal, query }) => ({
  status: 200,
  body: await listReplays(getContext().pool, principal.tenant.id, query),
}));
