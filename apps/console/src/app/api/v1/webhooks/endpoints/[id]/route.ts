import { getWebhookDeps } from "@/server/api/deps";
import { apiRoute } from "@/server/api/route";
import { deleteEndpoint, getEndpoint, updateEndpoint } from "@/server/services/webhooks";

export const dynamic = "force-dynamic";

export const GET = apiRoute("getWebhookEndpoint", async ({ principal, params }) => ({ status: 200, body: await getEndpoint(getWebhookDeps(), principal.tenant.id, params.id) }));

export const PATCH = apiRoute("updateWebhookEndpoint", async ({ principal, params, body }) => ({
  status: 200,
  body: await updateEndpoint(getWebhookDeps(), principal, params.id, body),
}));

export const DELETE = apiRoute("deleteWebhookEndpoint", async ({ principal, params }) => ({ status: 200, body: await deleteEndpoint(getWebhookDeps(), principal, params.id) }));
