import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { DlqConsole } from "./dlq-console";

export const dynamic = "force-dynamic";

/** Dead jobs and their governed replay. What a user may do is decided again by the API on every call. */
export default async function DlqPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/dlq" wide>
      {(m) => <DlqConsole key={m.tenantId} canReplay={m.role !== "viewer"} />}
    </TenantPage>
  );
}
