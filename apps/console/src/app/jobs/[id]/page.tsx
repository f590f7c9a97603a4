import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { JobDetail } from "./job-detail";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Job · Tick console" };

/** One job: its attempts on a time axis, its webhook deliveries, cancel and run again. */
export default async function JobPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return (
    <TenantPage user={await requireConsoleUser()} path="/jobs" wide>
      {(m) => <JobDetail key={`${m.tenantId}:${id}`} id={id} canWrite={hasScope(ROLE_SCOPES[m.role], "jobs:write")} />}
    </TenantPage>
  );
}
