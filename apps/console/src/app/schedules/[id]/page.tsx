import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { ScheduleDetail } from "./schedule-detail";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Schedule · Tick console" };

export default async function SchedulePage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return (
    <TenantPage user={await requireConsoleUser()} path="/schedules" wide>
      {(m) => <ScheduleDetail key={`${m.tenantId}:${id}`} id={id} canWrite={hasScope(ROLE_SCOPES[m.role], "schedules:write")} />}
    </TenantPage>
  );
}
