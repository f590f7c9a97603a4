"use client";

import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { WEBHOOK_EVENTS, type WebhookDelivery, type WebhookEndpoint } from "@tick/contract";
import { ApiProblem, buttonClass, consoleApi, formatTime, inputClass, ok, primaryButtonClass, QueryState, LoadMore } from "@/components/ui";

const STATUS_CLASS: Record<WebhookDelivery["status"], string> = {
  delivered: "bg-emerald-100 text-emerald-800",
  pending: "bg-indigo-100 text-indigo-800",
  failed: "bg-red-100 text-red-800",
};

export function WebhooksConsole({ canWrite }: { canWrite: boolean }) {
  const [endpointFilter, setEndpointFilter] = useState("");
  const endpoints = useQuery({ queryKey: ["webhook-endpoints"], queryFn: () => ok(consoleApi().call("listWebhookEndpoints", {})), refetchInterval: 5_000 });
  return (
    <div className="space-y-6">
      {!canWrite ? <p className="text-sm text-slate-600" data-testid="webhooks-read-only">Your role can see webhooks but not change them.</p> : null}
      <AddEndpoint canWrite={canWrite} />
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="endpoints">
        <h2 id="endpoints" className="mb-4 font-medium">Endpoints</h2>
        <QueryState isPending={endpoints.isPending} error={endpoints.error} isEmpty={(endpoints.data?.data.length ?? 0) === 0}
          empty="No endpoints yet. Add one above to receive a webhook when a job succeeds, dies, expires or is cancelled." retry={() => void endpoints.refetch()}>
          <ul className="divide-y divide-slate-100" data-testid="endpoint-list">
            {(endpoints.data?.data ?? []).map((e) => <EndpointRow key={e.id} endpoint={e} canWrite={canWrite} onShowLog={() => setEndpointFilter(e.id)} />)}
          </ul>
        </QueryState>
      </section>
      <Deliveries endpoints={endpoints.data?.data ?? []} endpointFilter={endpointFilter} setEndpointFilter={setEndpointFilter} canWrite={canWrite} />
      <SigningSecrets canWrite={canWrite} />
    </div>
  );
}

function EventBoxes({ name, initial, disabled }: { name: string; initial: readonly string[]; disabled: boolean }) {
  return (
    <fieldset>
      <legend className="text-sm font-medium">Events</legend>
      <div className="mt-1 flex flex-wrap gap-x-4 gap-y-1">
        {WEBHOOK_EVENTS.map((ev) => (
          <label key={ev} className="flex items-center gap-2 text-sm">
            <input type="checkbox" name={name} value={ev} defaultChecked={initial.includes(ev)} disabled={disabled} />
            <code>{ev}</code>
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function AddEndpoint({ canWrite }: { canWrite: boolean }) {
  const queryClient = useQueryClient();
  const create = useMutation({
    mutationFn: (input: { body: { url: string; events: string[]; description?: string }; form: HTMLFormElement }) =>
      ok(consoleApi().call("createWebhookEndpoint", { body: input.body })),
    onSuccess: (_res, input) => {
      input.form.reset();
      void queryClient.invalidateQueries({ queryKey: ["webhook-endpoints"] });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const formElement = e.currentTarget;
    const form = new FormData(formElement);
    const text = (k: string) => (typeof form.get(k) === "string" ? (form.get(k) as string).trim() : "");
    create.mutate({ form: formElement, body: { url: text("url"), events: form.getAll("events").map(String), ...(text("description") ? { description: text("description") } : {}) } });
  };
  const fields = create.error instanceof ApiProblem ? create.error.fields : {};
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="add-endpoint">
      <h2 id="add-endpoint" className="mb-1 font-medium">Add an endpoint</h2>
      <p className="mb-4 text-sm text-slate-600">
        Tick POSTs a signed JSON event to it (Standard Webhooks: <code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>),
        retrying with backoff. The URL must reach a public address.
      </p>
      <form onSubmit={submit} className="grid gap-4 md:grid-cols-2" aria-label="Add an endpoint">
        <div>
          <label htmlFor="endpoint-url" className="block text-sm font-medium">URL</label>
          <input id="endpoint-url" name="url" type="url" required disabled={!canWrite} className={inputClass} placeholder="https://example.com/hooks/tick" />
          {fields.url ? <span className="mt-1 block text-xs text-red-700">{fields.url}</span> : null}
        </div>
        <div>
          <label htmlFor="endpoint-description" className="block text-sm font-medium">Description <span className="font-normal text-slate-600">(optional)</span></label>
          <input id="endpoint-description" name="description" maxLength={200} disabled={!canWrite} className={inputClass} />
        </div>
        <div className="md:col-span-2"><EventBoxes name="events" initial={["job.succeeded", "job.dead"]} disabled={!canWrite} /></div>
        {create.error ? <p role="alert" className="text-sm text-red-700 md:col-span-2">{create.error.message}</p> : null}
        <div className="md:col-span-2">
          <button type="submit" className={primaryButtonClass} disabled={!canWrite || create.isPending}>{create.isPending ? "Adding…" : "Add endpoint"}</button>
        </div>
      </form>
    </section>
  );
}

function EndpointRow({ endpoint: e, canWrite, onShowLog }: { endpoint: WebhookEndpoint; canWrite: boolean; onShowLog: () => void }) {
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["webhook-endpoints"] });
    void queryClient.invalidateQueries({ queryKey: ["webhook-deliveries"] });
  };
  const update = useMutation({
    mutationFn: (body: { url?: string; events?: string[]; enabled?: boolean; description?: string | null }) =>
      ok(consoleApi().call("updateWebhookEndpoint", { params: { id: e.id }, body })),
    onSuccess: () => {
      setEditing(false);
      refresh();
    },
  });
  const remove = useMutation({ mutationFn: () => ok(consoleApi().call("deleteWebhookEndpoint", { params: { id: e.id } })), onSuccess: refresh });
  const test = useMutation({ mutationFn: () => ok(consoleApi().call("testWebhookEndpoint", { params: { id: e.id } })), onSuccess: refresh });
  const error = update.error ?? remove.error ?? test.error;
  const submit = (ev: FormEvent<HTMLFormElement>) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget);
    const url = form.get("url");
    update.mutate({ url: typeof url === "string" ? url.trim() : e.url, events: form.getAll("events").map(String) });
  };
  const total = e.last24h.delivered + e.last24h.pending + e.last24h.failed;
  return (
    <li className="py-4" data-testid="endpoint-row">
      <div className="flex flex-col gap-3 lg:flex-row lg:items-start lg:justify-between">
        <div className="min-w-0">
          <p className="flex flex-wrap items-center gap-2">
            <span className="break-all font-medium">{e.url}</span>
            <span className={`rounded px-1.5 py-0.5 text-xs ${e.enabled ? "bg-emerald-100 text-emerald-800" : "bg-slate-100 text-slate-700"}`}>{e.enabled ? "enabled" : "disabled"}</span>
          </p>
          {e.description ? <p className="text-sm text-slate-600">{e.description}</p> : null}
          <p className="text-xs text-slate-600">{e.events.join(", ")}</p>
          <div className="mt-2 flex items-center gap-2 text-xs text-slate-600">
            <span>Last 24 h:</span>
            <DeliveryBar counts={e.last24h} />
            <span>{total === 0 ? "no deliveries" : `${e.last24h.delivered} delivered, ${e.last24h.pending} pending, ${e.last24h.failed} failed`}</span>
          </div>
        </div>
        <div className="flex flex-wrap gap-2">
          <button type="button" className={buttonClass} disabled={!canWrite || test.isPending} onClick={() => test.mutate()} aria-label={`Send test to ${e.url}`}>Send test</button>
          <button type="button" className={buttonClass} onClick={onShowLog} aria-label={`Show log of ${e.url}`}>Show log</button>
          <button type="button" className={buttonClass} disabled={!canWrite || update.isPending} onClick={() => update.mutate({ enabled: !e.enabled })} aria-label={`${e.enabled ? "Disable" : "Enable"} ${e.url}`}>
            {e.enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" className={buttonClass} disabled={!canWrite} onClick={() => setEditing((x) => !x)} aria-expanded={editing} aria-label={`${editing ? "Close" : "Edit"} ${e.url}`}>{editing ? "Close" : "Edit"}</button>
          <button type="button" className={buttonClass} disabled={!canWrite || remove.isPending} aria-label={`Delete ${e.url}`}
            onClick={() => { if (window.confirm(`Delete the endpoint ${e.url}? Its delivery log stays.`)) remove.mutate(); }}>Delete</button>
        </div>
      </div>
      {test.data ? <p className="mt-2 text-xs text-slate-600" role="status">Test delivery queued; it appears in the log below.</p> : null}
      {error ? <p role="alert" className="mt-2 text-sm text-red-700">{error.message}</p> : null}
      {editing ? (
        <form onSubmit={submit} className="mt-3 space-y-3" aria-label={`Edit ${e.url}`}>
          <div>
            <label htmlFor={`url-${e.id}`} className="block text-sm font-medium">URL</label>
            <input id={`url-${e.id}`} name="url" type="url" defaultValue={e.url} required className={inputClass} />
          </div>
          <EventBoxes name="events" initial={e.events} disabled={false} />
          <button type="submit" className={primaryButtonClass} disabled={update.isPending}>Save</button>
        </form>
      ) : null}
    </li>
  );
}

/** The last day's deliveries of an endpoint as one stacked bar: green delivered, blue pending, red failed. */
function DeliveryBar({ counts }: { counts: WebhookEndpoint["last24h"] }) {
  const total = counts.delivered + counts.pending + counts.failed;
  const pct = (n: number) => `${total === 0 ? 0 : (100 * n) / total}%`;
  return (
    <span className="flex h-2 w-32 overflow-hidden rounded bg-slate-100" role="img" aria-label={`${counts.delivered} delivered, ${counts.pending} pending, ${counts.failed} failed in the last 24 hours`}>
      <span className="bg-emerald-600" style={{ width: pct(counts.delivered) }} />
      <span className="bg-indigo-500" style={{ width: pct(counts.pending) }} />
      <span className="bg-red-600" style={{ width: pct(counts.failed) }} />
    </span>
  );
}

function Deliveries({ endpoints, endpointFilter, setEndpointFilter, canWrite }: { endpoints: WebhookEndpoint[]; endpointFilter: string; setEndpointFilter: (id: string) => void; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const [status, setStatus] = useState("");
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const filter = { endpointId: endpointFilter, status };
  const log = useInfiniteQuery({
    queryKey: ["webhook-deliveries", filter],
    initialPageParam: undefined as string | undefined,
    refetchInterval: 3_000,
    queryFn: ({ pageParam }) =>
      ok(consoleApi().call("listWebhookDeliveries", { query: { limit: 50, ...(endpointFilter ? { endpointId: endpointFilter } : {}), ...(status ? { status } : {}), ...(pageParam ? { cursor: pageParam } : {}) } })),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const redeliver = useMutation({
    mutationFn: (ids: string[]) => ok(consoleApi().call("redeliverWebhooks", { body: { ids } })),
    onSuccess: () => {
      setSelected(new Set());
      void queryClient.invalidateQueries({ queryKey: ["webhook-deliveries"] });
    },
  });
  const rows = log.data?.pages.flatMap((p) => p.data) ?? [];
  const failed = rows.filter((d) => d.status === "failed");
  const field = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 text-sm";
  const queued = redeliver.data?.results.filter((r) => r.result === "queued").length;
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="deliveries">
      <h2 id="deliveries" className="mb-1 font-medium">Delivery log</h2>
      <p className="mb-4 text-sm text-slate-600">Every delivery with its tries, last answer and latency, newest first; refreshed every few seconds. A failed one can be sent again.</p>
      <div className="mb-4 grid gap-3 sm:grid-cols-3">
        <label className="text-xs font-medium text-slate-700">Endpoint
          <select className={field} value={endpointFilter} onChange={(e) => setEndpointFilter(e.target.value)}>
            <option value="">All endpoints and callbacks</option>
            {endpoints.map((e) => <option key={e.id} value={e.id}>{e.url}</option>)}
          </select>
        </label>
        <label className="text-xs font-medium text-slate-700">Status
          <select className={field} value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">Any</option>
            <option value="failed">failed</option>
            <option value="pending">pending</option>
            <option value="delivered">delivered</option>
          </select>
        </label>
        <div className="flex items-end gap-2">
          <button type="button" className={buttonClass} disabled={!canWrite || selected.size === 0 || redeliver.isPending} onClick={() => redeliver.mutate([...selected])}>
            Redeliver selected ({selected.size})
          </button>
          {failed.length > 0 ? (
            <button type="button" className={buttonClass} disabled={!canWrite} onClick={() => setSelected(new Set(failed.map((d) => d.id)))}>Select failed</button>
          ) : null}
        </div>
      </div>
      {queued !== undefined ? <p role="status" className="mb-3 text-sm text-slate-700">{queued} sent again.</p> : null}
      {redeliver.error ? <p role="alert" className="mb-3 text-sm text-red-700">{redeliver.error.message}</p> : null}
      <QueryState isPending={log.isPending} error={log.error} isEmpty={rows.length === 0} retry={() => void log.refetch()}
        empty={endpointFilter || status ? "No delivery matches." : "No deliveries yet. Send a test to an endpoint to see one here."}>
        <ul className="divide-y divide-slate-100" data-testid="delivery-list">
          {rows.map((d) => (
            <li key={d.id} className="flex gap-3 py-3" data-testid="delivery-row">
              <input type="checkbox" className="mt-1" aria-label={`Select delivery ${d.id.slice(0, 8)}`} disabled={!canWrite || d.status !== "failed"}
                checked={selected.has(d.id)}
                onChange={(e) => setSelected((s) => { const n = new Set(s); if (e.target.checked) n.add(d.id); else n.delete(d.id); return n; })} />
              <div className="min-w-0 flex-1">
                <p className="flex flex-wrap items-center gap-2 text-sm">
                  <code className="rounded bg-slate-100 px-1 text-xs">{d.event}</code>
                  <span className={`rounded px-1.5 py-0.5 text-xs ${STATUS_CLASS[d.status]}`}>{d.status}</span>
                  <span className="break-all text-slate-700">{d.url}</span>
                </p>
                <p className="text-xs text-slate-600">
                  {d.tries} {d.tries === 1 ? "try" : "tries"}
                  {d.lastStatus !== null ? ` · HTTP ${d.lastStatus}` : ""}
                  {d.lastDurationMs !== null ? ` · ${d.lastDurationMs} ms` : ""}
                  {d.lastError && d.lastError !== `HTTP ${d.lastStatus}` ? ` · ${d.lastError}` : ""}
                  {d.nextAttemptAt ? ` · next try ${formatTime(d.nextAttemptAt)}` : ""}
                  {d.jobId ? ` · job ${d.jobId.slice(0, 8)}` : ""} · {formatTime(d.createdAt)}
                </p>
              </div>
              {d.status === "failed" ? (
                <button type="button" className={`${buttonClass} self-start`} disabled={!canWrite || redeliver.isPending} onClick={() => redeliver.mutate([d.id])} aria-label={`Redeliver ${d.id.slice(0, 8)}`}>
                  Redeliver
                </button>
              ) : null}
            </li>
          ))}
        </ul>
        <LoadMore query={log} />
      </QueryState>
    </section>
  );
}

function SigningSecrets({ canWrite }: { canWrite: boolean }) {
  const queryClient = useQueryClient();
  const [overlapHours, setOverlapHours] = useState(24);
  const secrets = useQuery({ queryKey: ["signing-secrets"], enabled: canWrite, queryFn: () => ok(consoleApi().call("listSigningSecrets", {})) });
  const rotate = useMutation({
    mutationFn: () => ok(consoleApi().call("rotateSigningSecret", { body: { overlapSeconds: Math.round(overlapHours * 3600) } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["signing-secrets"] }),
  });
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="secrets">
      <h2 id="secrets" className="mb-1 font-medium">Signing secrets</h2>
      <p className="mb-4 text-sm text-slate-600">
        Every webhook and every job call is signed with each secret listed here. Rotating adds a new one; the current ones keep signing for the
        overlap, so receivers can switch without missing a webhook.
      </p>
      {!canWrite ? (
        <p className="text-sm text-slate-600">Only roles that manage webhooks can see the secrets.</p>
      ) : (
        <>
          <QueryState isPending={secrets.isPending} error={secrets.error} isEmpty={(secrets.data?.data.length ?? 0) === 0} empty="No secret yet: the first webhook creates one." retry={() => void secrets.refetch()}>
            <ul className="mb-4 space-y-2" data-testid="secret-list">
              {(secrets.data?.data ?? []).map((s) => (
                <li key={s.secret} className="text-xs">
                  <code className="block break-all rounded bg-slate-50 px-2 py-1">{s.secret}</code>
                  <span className="text-slate-600">created {formatTime(s.createdAt)}{s.expiresAt ? ` · stops signing ${formatTime(s.expiresAt)}` : " · current"}</span>
                </li>
              ))}
            </ul>
          </QueryState>
          <div className="flex flex-wrap items-end gap-3">
            <label className="text-xs font-medium text-slate-700">Overlap (hours)
              <input type="number" min={0} max={168} value={overlapHours} onChange={(e) => setOverlapHours(Number(e.target.value))} className="mt-1 block w-28 rounded-md border border-slate-300 px-2 py-1.5 text-sm" />
            </label>
            <button type="button" className={buttonClass} disabled={rotate.isPending}
              onClick={() => { if (window.confirm(`Rotate the signing secret? The current ones keep signing for ${overlapHours} h.`)) rotate.mutate(); }}>
              Rotate secret
            </button>
          </div>
          {rotate.error ? <p role="alert" className="mt-2 text-sm text-red-700">{rotate.error.message}</p> : null}
        </>
      )}
    </section>
  );
}
