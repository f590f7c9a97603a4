"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { API_KEY_SCOPES, type ApiKey } from "@tick/contract";
import { CopySecret } from "@/components/copy-secret";
import { ApiProblem, buttonClass, consoleApi, formatTime, inputClass, ok, primaryButtonClass, QueryState } from "@/components/ui";

const EXPIRY = [
  { label: "Never", days: null },
  { label: "30 days", days: 30 },
  { label: "90 days", days: 90 },
  { label: "1 year", days: 365 },
] as const;

function keyState(k: ApiKey): { label: string; className: string } {
  if (k.revokedAt) return { label: "Revoked", className: "bg-slate-100 text-slate-600" };
  if (k.expiresAt && Date.parse(k.expiresAt) <= Date.now()) return { label: "Expired", className: "bg-amber-100 text-amber-800" };
  return { label: "Active", className: "bg-emerald-100 text-emerald-800" };
}

export function KeysConsole({ canWrite, grantable }: { canWrite: boolean; grantable: string[] }) {
  return (
    <div className="space-y-6">
      <CreateKey canWrite={canWrite} grantable={grantable} />
      <KeyList canWrite={canWrite} />
    </div>
  );
}

function CreateKey({ canWrite, grantable }: { canWrite: boolean; grantable: string[] }) {
  const queryClient = useQueryClient();
  const all = grantable.includes("admin");
  const offered = API_KEY_SCOPES.filter((s) => all || grantable.includes(s));
  const [scopes, setScopes] = useState<string[]>(["jobs:read", "jobs:write"].filter((s) => offered.includes(s as never)));
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null);
  const create = useMutation({
    mutationFn: (body: { name: string; scopes: string[]; expiresAt?: string }) => ok(consoleApi().call("createApiKey", { body })),
    onSuccess: (res) => {
      setCreated({ key: res.key, name: res.apiKey.name });
      void queryClient.invalidateQueries({ queryKey: ["keys"] });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const days = Number(form.get("expiry") || 0);
    create.mutate({
      name: typeof form.get("name") === "string" ? (form.get("name") as string).trim() : "",
      scopes,
      ...(days > 0 ? { expiresAt: new Date(Date.now() + days * 86_400_000).toISOString() } : {}),
    });
  };
  const fieldError = create.error instanceof ApiProblem ? create.error.fields : {};

  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="create-key">
      <h2 id="create-key" className="mb-1 font-medium">Create an API key</h2>
      <p className="mb-4 text-sm text-slate-600">
        A key acts for this tenant with the scopes you give it and never more than your role: it acts as your role
        (lowered if yours is). The secret is shown once.
      </p>
      {!canWrite ? <p className="mb-3 text-sm text-slate-600" data-testid="keys-read-only">Your role can see keys but not create or revoke them.</p> : null}
      {created ? (
        <div className="mb-4 space-y-2 rounded-md border border-amber-200 bg-amber-50/50 p-3" data-testid="created-key">
          <p className="text-sm">Key <strong>{created.name}</strong> created. Copy it now: it will not be shown again.</p>
          <CopySecret value={created.key} label={`Secret of API key ${created.name}`} />
          <button type="button" className={buttonClass} onClick={() => setCreated(null)}>Done</button>
        </div>
      ) : null}
      <form onSubmit={submit} className="grid gap-4 md:grid-cols-2" aria-label="Create an API key">
        <label className="block text-sm font-medium">
          Name
          <input name="name" required maxLength={100} disabled={!canWrite} className={inputClass} placeholder="billing-service" />
          {fieldError.name ? <span className="mt-1 block text-xs text-red-700">{fieldError.name}</span> : null}
        </label>
        <label className="block text-sm font-medium">
          Expires
          <select name="expiry" disabled={!canWrite} className={inputClass} defaultValue="0">
            {EXPIRY.map((e) => <option key={e.label} value={e.days ?? 0}>{e.label}</option>)}
          </select>
        </label>
        <fieldset className="md:col-span-2">
          <legend className="text-sm font-medium">Scopes</legend>
          <div className="mt-2 grid grid-cols-1 gap-2 sm:grid-cols-2 lg:grid-cols-3">
            {offered.map((s) => (
              <label key={s} className="flex items-center gap-2 text-sm">
                <input type="checkbox" disabled={!canWrite} checked={scopes.includes(s)}
                  onChange={(e) => setScopes((cur) => (e.target.checked ? [...cur, s] : cur.filter((x) => x !== s)))} />
                <code>{s}</code>
              </label>
            ))}
          </div>
          {fieldError.scopes ? <span className="mt-1 block text-xs text-red-700">{fieldError.scopes}</span> : null}
        </fieldset>
        {create.error ? <p role="alert" className="text-sm text-red-700 md:col-span-2">{create.error.message}</p> : null}
        <div className="md:col-span-2">
          <button type="submit" className={primaryButtonClass} disabled={!canWrite || create.isPending || scopes.length === 0}>
            {create.isPending ? "Creating…" : "Create key"}
          </button>
        </div>
      </form>
    </section>
  );
}

function KeyList({ canWrite }: { canWrite: boolean }) {
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ["keys"], queryFn: () => ok(consoleApi().call("listApiKeys", {})) });
  const revoke = useMutation({
    mutationFn: (id: string) => ok(consoleApi().call("revokeApiKey", { params: { id } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["keys"] }),
  });
  const rows = keys.data?.data ?? [];
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="key-list">
      <h2 id="key-list" className="mb-4 font-medium">Keys</h2>
      <QueryState isPending={keys.isPending} error={keys.error} isEmpty={rows.length === 0} empty="No API keys yet. Create one above." retry={() => void keys.refetch()}>
        {revoke.error ? <p role="alert" className="mb-3 text-sm text-red-700">{revoke.error.message}</p> : null}
        <ul className="divide-y divide-slate-100" data-testid="key-list">
          {rows.map((k) => {
            const state = keyState(k);
            return (
              <li key={k.id} className="flex flex-col gap-2 py-3 sm:flex-row sm:items-center sm:justify-between" data-testid="key-row">
                <div className="min-w-0">
                  <p className="flex flex-wrap items-center gap-2">
                    <span className="font-medium">{k.name}</span>
                    <code className="text-xs text-slate-600">{k.prefix}…</code>
                    <span className={`rounded px-1.5 py-0.5 text-xs ${state.className}`}>{state.label}</span>
                  </p>
                  <p className="break-words text-xs text-slate-600">{k.scopes.join(", ")} · acts as {k.role}</p>
                  <p className="text-xs text-slate-600">
                    Created {formatTime(k.createdAt)} · last used {k.lastUsedAt ? formatTime(k.lastUsedAt) : "never"}
                    {k.expiresAt ? ` · expires ${formatTime(k.expiresAt)}` : ""}
                  </p>
                </div>
                {!k.revokedAt ? (
                  <button type="button" className={buttonClass} disabled={!canWrite || revoke.isPending}
                    aria-label={`Revoke ${k.name}`}
                    onClick={() => {
                      if (window.confirm(`Revoke "${k.name}" (${k.prefix}…)? Requests with it fail at once.`)) revoke.mutate(k.id);
                    }}>
                    Revoke
                  </button>
                ) : null}
              </li>
            );
          })}
        </ul>
      </QueryState>
    </section>
  );
}
