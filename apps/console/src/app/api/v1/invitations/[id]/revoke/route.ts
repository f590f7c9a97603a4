import { getMemberDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { revokeInvitation } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const POST = apiRoute("revokeInvitation", async ({ principal, params }) => ({ status: 200, body: await revokeInvitation(getMemberDeps(), principal, params.id) }));
