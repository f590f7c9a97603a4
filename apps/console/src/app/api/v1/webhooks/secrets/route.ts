import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { listSigningSecrets } from "@/server/services/signing-secrets";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listSigningSecrets", async ({ principal }) => ({
  status: 200,
  body: await listSigningSecrets(getContext().pool, principal.tenant.id),
}));
