import { requireConsoleUser, TenantPage } from "@/components/console-page";
import { OverviewCharts } from "@/components/overview-charts";
import { StatusBars } from "@/components/status-bars";
import { getTenantServiceDeps } from "@/server/api/deps";
import { getTenantOverview } from "@/server/services/overview";

export const dynamic = "force-dynamic";

export default async function DashboardPage() {
  return <TenantPage user={await requireConsoleUser()} path="/" wide>{(m) => <TenantDashboard tenantId={m.tenantId} />}</TenantPage>;
}

async function TenantDashboard({ tenantId }: { tenantId: string }) {
  const overview = await getTenantOverview(getTenantServiceDeps(), tenantId);
  return (
    <div className="space-y-6">
    <OverviewCharts key={tenantId} />
    <div className="grid gap-6 md:grid-cols-3">
      <section className="rounded-xl border border-slate-200 bg-white p-5 md:col-span-2">
        <h2 className="mb-4 font-medium">Jobs by status</h2>
        <p className="-mt-3 mb-4 text-xs text-slate-500">Live jobs, the DLQ, and jobs finished in the last 24 hours.</p>
        <StatusBars counts={overview.jobsByStatus} />
      </section>
      <section className="space-y-4 rounded-xl border border-slate-200 bg-white p-5">
        <h2 className="font-medium">Tenant</h2>
        <dl className="grid grid-cols-2 gap-2 text-sm">
          <dt className="text-slate-500">Queues</dt>
          <dd data-testid="queue-count">{overview.queues.length}</dd>
          <dt className="text-slate-500">Schedules</dt>
          <dd>{overview.schedules}</dd>
          <dt className="text-slate-500">Active API keys</dt>
          <dd>{overview.apiKeys}</dd>
          {overview.lifecycle ? (
            <>
              <dt className="text-slate-500">History kept</dt>
              <dd data-testid="retention">
                {overview.lifecycle.retention_days} days (DLQ {overview.lifecycle.dlq_retention_days})
              </dd>
              <dt className="text-slate-500">Exported through</dt>
              <dd title={overview.lifecycle.export_before_prune ? "Retention waits for an export" : "Retention does not wait for exports"}>
                {overview.lifecycle.exported_through ? overview.lifecycle.exported_through.toISOString().slice(0, 16).replace("T", " ") : "never"}
                {overview.lifecycle.export_before_prune ? " (required)" : ""}
              </dd>
            </>
          ) : null}
        </dl>
        <a className="block text-sm text-indigo-600 hover:underline" href="/api/v1/jobs/export" download="jobs.ndjson" data-testid="export-link">
          Export finished jobs (NDJSON)
        </a>
        <ul className="text-sm">
          {overview.queues.map((q) => (
            <li key={q.name} className="flex justify-between">
              <span>{q.name}</span>
              <span className={q.paused ? "text-amber-800" : "text-emerald-800"}>{q.paused ? "paused" : "running"}</span>
            </li>
          ))}
        </ul>
      </section>
    </div>
    </div>
  );
}