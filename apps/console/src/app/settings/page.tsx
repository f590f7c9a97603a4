import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { getTenantServiceDeps } from "@/server/api/deps";
import { getTenantLimits } from "@/server/services/settings";
import { SettingsConsole } from "./settings-console";

export const dynamic = "force-dynamic";

/** Retention and export (admins change them) and the tenant's limits (set by the platform's operators). */
export default async function SettingsPage() {
  return (
    <TenantPage user={await requireConsoleUser()} path="/settings">
      {(m) => (
        <div className="space-y-6">
          <SettingsConsole key={m.tenantId} canChange={hasScope(ROLE_SCOPES[m.role], "admin")} />
          <TenantLimits tenantId={m.tenantId} />
        </div>
      )}
    </TenantPage>
  );
}

async function TenantLimits({ tenantId }: { tenantId: string }) {
  const t = await getTenantLimits(getTenantServiceDeps(), tenantId);
  const limits = [
    { label: "Weight (share of dispatch capacity)", value: String(t.weight) },
    { label: "Admission rate", value: `${t.admissionRate} jobs/s, bursts of ${t.admissionBurst.toLocaleString("en")}` },
    { label: "Pending-job quota", value: t.maxPendingJobs.toLocaleString("en") },
    { label: "Attempts in flight at once", value: t.maxInFlight.toLocaleString("en") },
  ];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="limits">
      <h2 id="limits" className="mb-1 font-medium">Limits</h2>
      <p className="mb-4 text-sm text-slate-600">Set by the platform&apos;s operators; ask them to change one.</p>
      <dl className="grid gap-x-6 gap-y-2 text-sm sm:grid-cols-2" data-testid="tenant-limits">
        {limits.map((l) => (
          <div key={l.label} className="flex flex-col">
            <dt className="text-slate-600">{l.label}</dt>
            <dd className="font-medium">{l.value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
