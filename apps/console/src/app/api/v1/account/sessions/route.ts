import { accountApiRoute } from "@/server/api/route";
import { getSessionDeps } from "@/server/api/deps";
import { listSessions } from "@/server/services/sessions";

export const dynamic = "force-dynamic";

export const GET = accountApiRoute("listAccountSessions", async ({ principal }) => ({
  status: 200,
  body: await listSessions(getSessionDeps(), principal.actor.id, principal.sessionId),
}));
