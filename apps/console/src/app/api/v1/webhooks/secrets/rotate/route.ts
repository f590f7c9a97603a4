import { getTenantServiceDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { rotateSigningSecret } from "@/server/services/signing-secrets";

export const dynamic = "force-dynamic";

export const POST = apiRoute("rotateSigningSecret", async ({ principal, body }) => ({
  status: 200,
  body: await rotateSigningSecret(getTenantServiceDeps(), principal, body.overlapSeconds),
}));
