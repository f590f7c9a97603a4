import { getMemberDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listMembers } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listMembers", async ({ principal }) => ({ status: 200, body: await listMembers(getMemberDeps(), principal.tenant.id) }));
