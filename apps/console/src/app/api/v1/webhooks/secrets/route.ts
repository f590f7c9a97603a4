import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listSigningSecrets } from "@/server/services/signing-secrets";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listSigningSecrets", async ({ principal }) => ({
  status: 200,
  body: await listSigningSecrets(getTenantServiceDeps(), principal.tenant.id),
}));
