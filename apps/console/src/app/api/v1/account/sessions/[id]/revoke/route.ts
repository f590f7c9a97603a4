import { accountApiRoute } from "@/server/api/route";
import { getSessionDeps } from "@/server/api/deps";
import { endOwnSession } from "@/server/services/sessions";

export const dynamic = "force-dynamic";

export const POST = accountApiRoute("revokeAccountSession", async ({ principal, params }) => ({
  status: 200,
  body: await endOwnSession(getSessionDeps(), principal.actor.id, params.id),
}));
