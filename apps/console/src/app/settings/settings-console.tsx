"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { ApiProblem, consoleApi, formatTime, inputClass, ok, primaryButtonClass, QueryState } from "@/components/ui";

/** Retention, DLQ retention, export-before-prune, and the export of finished jobs. */
export function SettingsConsole({ canChange }: { canChange: boolean }) {
  const queryClient = useQueryClient();
  const settings = useQuery({ queryKey: ["settings"], enabled: canChange, queryFn: () => ok(consoleApi().call("getSettings", {})) });
  const [saved, setSaved] = useState(false);
  const save = useMutation({
    mutationFn: (body: { retentionDays: number; dlqRetentionDays: number; exportBeforePrune: boolean }) => ok(consoleApi().call("updateSettings", { body })),
    onSuccess: () => {
      setSaved(true);
      void queryClient.invalidateQueries({ queryKey: ["settings"] });
    },
  });
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  // A form post (POST /jobs/export records the export; a GET would not): the browser downloads the stream as it
  // comes, and sends the console's Origin, which cookie-authenticated writes must carry.
  const exportAction = `/api/v1/jobs/export?${new URLSearchParams({ ...(from ? { from: new Date(from).toISOString() } : {}), ...(to ? { to: new Date(to).toISOString() } : {}) })}`;
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setSaved(false);
    save.mutate({ retentionDays: Number(form.get("retentionDays")), dlqRetentionDays: Number(form.get("dlqRetentionDays")), exportBeforePrune: form.get("exportBeforePrune") === "on" });
  };
  const fields = save.error instanceof ApiProblem ? save.error.fields : {};
  const s = settings.data;
  return (
    <>
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="retention">
        <h2 id="retention" className="mb-1 font-medium">History and retention</h2>
        <p className="mb-4 text-sm text-slate-600">How long finished jobs, their attempts and dead jobs are kept. Changes are recorded in the audit log.</p>
        {!canChange ? (
          <p className="text-sm text-slate-600" data-testid="settings-read-only">Only admins and owners can see and change these settings.</p>
        ) : (
          <QueryState isPending={settings.isPending} error={settings.error} isEmpty={false} empty={null} retry={() => void settings.refetch()}>
            {s ? (
              <form onSubmit={submit} className="grid gap-4 sm:grid-cols-2" aria-label="Retention settings">
                <div>
                  <label htmlFor="retentionDays" className="block text-sm font-medium">Keep finished jobs (days)</label>
                  <input id="retentionDays" name="retentionDays" type="number" min={1} max={s.retentionMaxDays} defaultValue={s.retentionDays} required className={inputClass} />
                  <span className="mt-1 block text-xs text-slate-600">At most {s.retentionMaxDays} on this deployment.</span>
                  {fields.retentionDays ? <span className="block text-xs text-red-700">{fields.retentionDays}</span> : null}
                </div>
                <div>
                  <label htmlFor="dlqRetentionDays" className="block text-sm font-medium">Keep dead jobs in the DLQ (days)</label>
                  <input id="dlqRetentionDays" name="dlqRetentionDays" type="number" min={1} max={3650} defaultValue={s.dlqRetentionDays} required className={inputClass} />
                  <span className="mt-1 block text-xs text-slate-600">Then they go to history like any finished job.</span>
                </div>
                <label className="flex items-start gap-2 text-sm sm:col-span-2">
                  <input type="checkbox" name="exportBeforePrune" defaultChecked={s.exportBeforePrune} className="mt-1" />
                  <span>
                    <span className="font-medium">Export before deleting</span>
                    <span className="block text-slate-600">Retention deletes only history already covered by a complete export (exported through {formatTime(s.exportedThrough)}).</span>
                  </span>
                </label>
                {save.error ? <p role="alert" className="text-sm text-red-700 sm:col-span-2">{save.error.message}</p> : null}
                {saved ? <p role="status" className="text-sm text-emerald-800 sm:col-span-2">Saved.</p> : null}
                <div className="sm:col-span-2">
                  <button type="submit" className={primaryButtonClass} disabled={save.isPending}>{save.isPending ? "Saving…" : "Save"}</button>
                </div>
              </form>
            ) : null}
          </QueryState>
        )}
      </section>
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="export">
        <h2 id="export" className="mb-1 font-medium">Export finished jobs</h2>
        <p className="mb-4 text-sm text-slate-600">One JSON line per finished job with its attempts (NDJSON), streamed. A complete export moves &ldquo;exported through&rdquo; forward.</p>
        <form method="post" action={exportAction} className="grid gap-3 sm:grid-cols-[1fr_1fr_auto] sm:items-end">
          <label className="text-xs font-medium text-slate-700">Finished from (optional)
            <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
          </label>
          <label className="text-xs font-medium text-slate-700">Until (optional)
            <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
          </label>
          <button type="submit" className={`${primaryButtonClass} text-center`} data-testid="settings-export-button">Download NDJSON</button>
        </form>
      </section>
    </>
  );
}
