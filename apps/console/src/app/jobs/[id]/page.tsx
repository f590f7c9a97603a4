import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { JobDetail } from "./job-detail";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Job · Tick console" };

/** One job: its attempts on a time axis, its webhook deliveries, cancel and run again. */
export default async function JobPage({ params, searchParams }: { params: Promise<{ id: string }>; searchParams: Promise<{ debounced?: string }> }) {
  const { id } = await params;
  // The new-job form lands here with ?debounced=1 when a debounce window folded its create into this job.
  const debounced = (await searchParams).debounced === "1";
  return (
    <TenantPage user={await requireConsoleUser()} path="/jobs" wide>
      {(m) => <JobDetail key={`${m.tenantId}:${id}`} id={id} debounced={debounced} canWrite={hasScope(ROLE_SCOPES[m.role], "jobs:write")} />}
    </TenantPage>
  );
}
