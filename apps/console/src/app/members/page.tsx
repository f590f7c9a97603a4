import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { MembersConsole } from "./members-console";

export const dynamic = "force-dynamic";

/** The tenant's people: members with their roles, invitations. The API decides again on every call. */
export default async function MembersPage() {
  const user = await requireConsoleUser();
  return (
    <TenantPage user={user} path="/members">
      {(m) => <MembersConsole key={m.tenantId} me={user.id} myRole={m.role} canManage={hasScope(ROLE_SCOPES[m.role], "members:write")} />}
    </TenantPage>
  );
}
