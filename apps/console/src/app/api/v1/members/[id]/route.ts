import { getMemberDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { removeMember, updateMember } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const PATCH = apiRoute("updateMember", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateMember(getMemberDeps(), principal, params.id, body.role),
}));

export const DELETE = apiRoute("removeMember", async ({ principal, params }) => ({
  status: 200,
  body: await removeMember(getMemberDeps(), principal, params.id),
}));
