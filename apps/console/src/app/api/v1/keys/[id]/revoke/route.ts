import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { revokeApiKey } from "@/server/services/keys";

export const dynamic = "force-dynamic";

export const POST = apiRoute("revokeApiKey", async ({ principal, params }) => ({
  status: 200,
  body: await revokeApiKey(getContext().prisma, principal, params.id),
}));
