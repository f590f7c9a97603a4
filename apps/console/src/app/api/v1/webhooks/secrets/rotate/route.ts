import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { rotateSigningSecret } from "@/server/services/signing-secrets";

export const dynamic = "force-dynamic";

export const POST = apiRoute("rotateSigningSecret", async ({ principal, body }) => ({
  status: 200,
  body: await rotateSigningSecret(getContext().pool, principal, body.overlapSeconds),
}));
