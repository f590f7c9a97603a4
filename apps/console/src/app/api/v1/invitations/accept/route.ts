import { getMemberDeps } from "@/server/api/deps";
import { publicApiRoute } from "@/server/api/route";
import { acceptInvitation } from "@/server/services/members";

export const dynamic = "force-dynamic";

export const POST = publicApiRoute("acceptInvitation", async ({ body, clientAddress }) => ({
  status: 200,
  body: await acceptInvitation(getMemberDeps(), body, clientAddress),
}));
