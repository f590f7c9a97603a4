import { getWebhookDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { testEndpoint } from "@/server/services/webhooks";

export const dynamic = "force-dynamic";

export const POST = apiRoute("testWebhookEndpoint", async ({ principal, params }) => ({ status: 202, body: await testEndpoint(getWebhookDeps(), principal, params.id) }));
