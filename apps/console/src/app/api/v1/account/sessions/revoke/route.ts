import { accountApiRoute } from "@/server/api/route";
import { getSessionDeps } from "@/server/api/deps";
import { endAllSessions } from "@/server/services/sessions";

export const dynamic = "force-dynamic";

/** Sign out everywhere: this session too. */
export const POST = accountApiRoute("revokeAccountSessions", async ({ principal }) => ({
  status: 200,
  body: await endAllSessions(getSessionDeps(), principal.actor.id),
}));
