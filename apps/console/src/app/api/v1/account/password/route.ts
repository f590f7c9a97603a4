import { accountApiRoute } from "@/server/api/route";
import { getSessionDeps } from "@/server/api/deps";
import { changePassword } from "@/server/services/sessions";

export const dynamic = "force-dynamic";

/** A new password, proven by the current one; the person's other sessions end. */
export const POST = accountApiRoute("changePassword", async ({ principal, body }) => ({
  status: 200,
  body: await changePassword(getSessionDeps(), { userId: principal.actor.id, sessionId: principal.sessionId, email: principal.email }, body),
}));
