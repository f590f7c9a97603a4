import { auditActor } from "@/server/api/authenticate";
import { apiRoute } from "@/server/api/route";
import { getContext } from "@/server/context";
import { writeAudit } from "@/server/services/audit";
import { rotateSigningSecret } from "@/server/services/signing-secrets";

export const dynamic = "force-dynamic";

export const POST = apiRoute("rotateSigningSecret", async ({ principal, body }) => {
  const { pool, prisma } = getContext();
  const result = await rotateSigningSecret(pool, principal.tenant.id, body.overlapSeconds);
  await writeAudit(prisma, {
    ...auditActor(principal),
    action: "webhook_secret.rotated",
    details: { overlapSeconds: body.overlapSeconds },
  });
  return { status: 200, body: result };
});
