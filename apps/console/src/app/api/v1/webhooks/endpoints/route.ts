import { getWebhookDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { createEndpoint, listEndpoints } from "@/server/services/webhooks";

export const dynamic = "force-dynamic";

export const GET = apiRoute("listWebhookEndpoints", async ({ principal }) => ({ status: 200, body: await listEndpoints(getWebhookDeps(), principal.tenant.id) }));

export const POST = apiRoute("createWebhookEndpoint", async ({ principal, body }) => ({ status: 201, body: await createEndpoint(getWebhookDeps(), principal, body) }));
