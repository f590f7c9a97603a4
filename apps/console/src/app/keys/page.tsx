import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { KeysConsole } from "./keys-console";

export const dynamic = "force-dynamic";

/** The tenant's API keys. What a user may do is decided again by the API on every call. */
export default async function KeysPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/keys">
      {(m) => <KeysConsole key={m.tenantId} canWrite={hasScope(ROLE_SCOPES[m.role], "keys:write")} grantable={[...ROLE_SCOPES[m.role]]} />}
    </TenantPage>
  );
}
