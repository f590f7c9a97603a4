import { getWebhookDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { listDeliveries } from "@/server/services/webhooks";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listWebhookDeliveries", async ({ principal, query }) => ({ status: 200, body: await listDeliveries(getWebhookDeps(), principal.tenant.id, query) }));
