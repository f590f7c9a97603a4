import { getAccountDeps } from "@/server/api/deps";
import { publicApiRoute } from "@/server/api/route";
import { signUp } from "@/server/services/accounts";

export const dynamic = "force-dynamic";

export const POST = publicApiRoute("signUp", async ({ body, clientAddress }) => ({
  status: 202,
  body: await signUp(getAccountDeps(), body, clientAddress),
}));
