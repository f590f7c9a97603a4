import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { WebhooksConsole } from "./webhooks-console";

export const dynamic = "force-dynamic";

/** Webhook endpoints, signing secrets and the delivery log. The API decides again on every call. */
export default async function WebhooksPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/webhooks" wide>
      {(m) => <WebhooksConsole key={m.tenantId} canWrite={hasScope(ROLE_SCOPES[m.role], "webhooks:write")} />}
    </TenantPage>
  );
}
