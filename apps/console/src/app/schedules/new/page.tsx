import type { Metadata } from "next";
import Link from "next/link";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { ScheduleEditor } from "../schedule-editor";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "New schedule · Tick console" };

export default async function NewSchedulePage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/schedules" wide>
      {(m) => (
        <section key={m.tenantId} className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="new-schedule-heading">
          <p className="mb-3 text-sm"><Link href="/schedules" className="text-indigo-700 underline">← All schedules</Link></p>
          <h2 id="new-schedule-heading" className="mb-1 font-medium">New schedule</h2>
          <p className="mb-4 text-sm text-slate-600">Each occurrence of the rule becomes one job, exactly once, even across scheduler failovers.</p>
          <ScheduleEditor />
        </section>
      )}
    </TenantPage>
  );
}
