import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { QueuesConsole } from "./queues-console";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Queues · Tick console" };

/** Queues with their live backlog and limits, and the dependencies their jobs call with breaker state. */
export default async function QueuesPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/queues" wide>
      {(m) => <QueuesConsole key={m.tenantId} canWrite={hasScope(ROLE_SCOPES[m.role], "queues:write")} />}
    </TenantPage>
  );
}
