import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { JobsConsole } from "./jobs-console";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Jobs · Tick console" };

/** The tenant's jobs: filters, search by ID or idempotency key, bulk cancel. The API decides again on every call. */
export default async function JobsPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/jobs" wide>
      {(m) => <JobsConsole key={m.tenantId} canWrite={hasScope(ROLE_SCOPES[m.role], "jobs:write")} />}
    </TenantPage>
  );
}
