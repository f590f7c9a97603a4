import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { AuditConsole } from "./audit-console";

export const dynamic = "force-dynamic";

/** Who changed what, when: the tenant's audit log with filters. Every role may read it. */
export default async function AuditPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/audit" wide>
      {(m) => <AuditConsole key={m.tenantId} />}
    </TenantPage>
  );
}
