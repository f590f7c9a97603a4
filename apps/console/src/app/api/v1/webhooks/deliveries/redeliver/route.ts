import { getWebhookDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { redeliver } from "@/server/services/webhooks";

export const dynamic = "force-dynamic";

export const POST = apiRoute("redeliverWebhooks", async ({ principal, body }) => ({ status: 200, body: await redeliver(getWebhookDeps(), principal, body.ids) }));
