import { getMemberDeps } from "@/server/api/deps";
import { publicApiRoute } from "@/server/api/route";
import { previewInvitation } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const POST = publicApiRoute("previewInvitation", async ({ body, clientAddress }) => ({
  status: 200,
  body: await previewInvitation(getMemberDeps(), body.token, clientAddress),
}));
