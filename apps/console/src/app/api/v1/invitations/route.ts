import { getMemberDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { inviteMember } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const POST = apiRoute("inviteMember", async ({ principal, body }) => ({ status: 201, body: await inviteMember(getMemberDeps(), principal, body) }));
