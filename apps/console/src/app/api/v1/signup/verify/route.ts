import { getAccountDeps } from "@/server/api/deps";
import { publicApiRoute } from "@/server/api/route";
import { verifySignup } from "@/server/services/accounts";

export const dynamic = "force-dynamic";

export const POST = publicApiRoute("verifySignup", async ({ body, clientAddress }) => ({
  status: 201,
  body: await verifySignup(getAccountDeps(), body.token, clientAddress),
}));
