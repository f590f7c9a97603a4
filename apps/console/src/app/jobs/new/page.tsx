import type { Metadata } from "next";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { NewJobForm } from "./new-job-form";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "New job · Tick console" };

/** Create a job from a form; the API validates it and its errors are shown at their fields. */
export default async function NewJobPage() {
  return <TenantPage user={await requireConsoleUser()} path="/jobs">{(m) => <NewJobForm key={m.tenantId} />}</TenantPage>;
}
