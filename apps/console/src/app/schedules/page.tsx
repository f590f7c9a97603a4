import type { Metadata } from "next";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { SchedulesConsole } from "./schedules-console";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Schedules · Tick console" };

/** Recurring schedules: rule, zone, next and last fire; pause, resume, delete. */
export default async function SchedulesPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/schedules" wide>
      {(m) => <SchedulesConsole key={m.tenantId} canWrite={hasScope(ROLE_SCOPES[m.role], "schedules:write")} />}
    </TenantPage>
  );
}
