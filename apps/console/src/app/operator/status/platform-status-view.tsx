"use client";

import { useQuery } from "@tanstack/react-query";
import type { NodeStatus, PlatformStatus, ShardStatus } from "@tick/contract";
import { consoleApi, formatTime, ok, QueryState } from "@/components/ui";

/** How often the page asks again: heartbeats and lease renewals come every few seconds. */
const REFRESH_MS = 3_000;

// Light fills with dark text (contrast), one per holder; the holder's name is in each cell's label and the legend.
const HOLDER_COLORS = [
  "border-sky-500 bg-sky-100",
  "border-emerald-500 bg-emerald-100",
  "border-violet-500 bg-violet-100",
  "border-amber-500 bg-amber-100",
  "border-rose-500 bg-rose-100",
  "border-teal-500 bg-teal-100",
  "border-fuchsia-500 bg-fuchsia-100",
  "border-lime-600 bg-lime-100",
];

const seconds = (s: number) => (s < 1 ? "<1 s" : s < 120 ? `${Math.round(s)} s` : `${Math.round(s / 60)} min`);

export function PlatformStatusView() {
  const status = useQuery({
    queryKey: ["operator-status"],
    queryFn: () => ok(consoleApi().call("operatorStatus", {})),
    refetchInterval: REFRESH_MS,
  });
  const data = status.data;
  return (
    <div className="space-y-6">
      <p className="text-sm text-slate-600" aria-live="polite">
        {data ? <>As of {formatTime(data.checkedAt, { precise: true })} (database clock); refreshed every {REFRESH_MS / 1000} s.</> : "Refreshed every few seconds."}
        {status.error && data ? <span className="ml-1 text-red-700">The last refresh failed: {status.error.message}</span> : null}
      </p>
      <QueryState isPending={status.isPending} error={data ? null : status.error} isEmpty={!!data && data.shards.length === 0 && data.nodes.length === 0}
        empty="No shard leases and no scheduler or worker has reported yet. Start a scheduler: it creates the shard leases on start." retry={() => void status.refetch()}>
        {data ? <StatusBody data={data} /> : null}
      </QueryState>
    </div>
  );
}

function StatusBody({ data }: { data: PlatformStatus }) {
  const holders = [...new Set(data.shards.filter((s) => s.held && s.holder).map((s) => s.holder!))].sort();
  const colorOf = (holder: string) => HOLDER_COLORS[holders.indexOf(holder) % HOLDER_COLORS.length]!;
  const schedulers = data.nodes.filter((n) => n.role === "scheduler");
  const workers = data.nodes.filter((n) => n.role === "worker");
  const held = data.shards.filter((s) => s.held).length;
  const polling = data.shards.filter((s) => s.dueIndex === "polling").length;
  const unknownMode = data.shards.filter((s) => s.dueIndex === "unknown").length;
  return (
    <>
      <dl className="grid grid-cols-2 gap-3 lg:grid-cols-4" data-testid="status-summary">
        <Figure label="Shards held" value={`${held} of ${data.shardCount}`} warn={held < data.shardCount} />
        <Figure label="Outbox lag" value={seconds(data.outbox.lagSeconds)} detail={`${data.outbox.backlog.toLocaleString()} unpublished`} warn={data.outbox.lagSeconds > 30} />
        <Figure label="Due index" value={polling > 0 ? `${polling} polling` : unknownMode > 0 ? `${unknownMode} unknown` : "index"}
          detail={polling > 0 ? "shards polling Postgres (S9)" : unknownMode > 0 ? "shards not yet reported by their holder" : "every held shard uses Redis"} warn={polling > 0} />
        <Figure label="Open breakers" value={data.breakers.available ? String(data.breakers.open.reduce((n, b) => n + b.openTenants, 0)) : "unknown"}
          detail={data.breakers.available ? `${data.breakers.open.length} dependencies` : "Redis did not answer"} warn={!data.breakers.available || data.breakers.open.length > 0} />
      </dl>

      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="shard-map">
        <h2 id="shard-map" className="font-medium">Shard map</h2>
        <p className="mb-3 text-sm text-slate-600">Each shard&apos;s lease from <code>shard_leases</code>: its holder (colour), epoch, when the lease expires and how the holder finds due work (I: Redis index, P: polling Postgres).</p>
        <ul className="grid grid-cols-4 gap-2 sm:grid-cols-8 lg:grid-cols-16" data-testid="shard-map">
          {data.shards.map((s) => <ShardCell key={s.shard} shard={s} checkedAt={data.checkedAt} color={s.held && s.holder ? colorOf(s.holder) : null} />)}
        </ul>
        <ul className="mt-3 flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700" aria-label="Holders">
          {holders.map((h) => (
            <li key={h} className="flex min-w-0 items-center gap-1.5">
              <span className={`inline-block size-3 shrink-0 rounded-sm border ${colorOf(h)}`} aria-hidden="true" />
              <span className="break-all">{h}{regionOf(data.shards, h) ? ` (${regionOf(data.shards, h)})` : ""}</span>
            </li>
          ))}
          <li className="flex items-center gap-1.5">
            <span className="inline-block size-3 rounded-sm border border-dashed border-slate-400 bg-slate-50" aria-hidden="true" />
            not held
          </li>
        </ul>
      </section>

      <NodeList title="Schedulers" id="schedulers" nodes={schedulers} empty="No scheduler has sent a heartbeat in the last 10 minutes: nothing is dispatched." />
      <NodeList title="Workers" id="workers" nodes={workers} empty="No worker has sent a heartbeat in the last 10 minutes: dispatched attempts wait." />

      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="breakers">
        <h2 id="breakers" className="font-medium">Open breakers</h2>
        <p className="mb-3 text-sm text-slate-600">Per dependency, the tenants whose breaker is open: their jobs calling it wait until a probe succeeds.</p>
        {!data.breakers.available ? (
          <p role="alert" className="text-sm text-amber-800">Redis did not answer: open breakers are unknown.</p>
        ) : data.breakers.open.length === 0 ? (
          <p className="text-sm text-slate-600" data-testid="no-open-breakers">No breaker is open.</p>
        ) : (
          <ul className="divide-y divide-slate-100" data-testid="open-breakers">
            {data.breakers.open.map((b) => (
              <li key={b.dependency} className="py-2 text-sm">
                <p><span className="break-all font-medium">{b.dependency}</span> · {b.openTenants} tenant{b.openTenants === 1 ? "" : "s"}</p>
                <p className="break-all text-xs text-slate-600">{b.tenantIds.join(", ")}</p>
              </li>
            ))}
          </ul>
        )}
      </section>
    </>
  );
}

const regionOf = (shards: ShardStatus[], holder: string) => shards.find((s) => s.holder === holder && s.held)?.region ?? null;

function Figure({ label, value, detail, warn }: { label: string; value: string; detail?: string; warn?: boolean }) {
  return (
    <div className={`rounded-xl border bg-white p-4 ${warn ? "border-amber-400" : "border-slate-200"}`}>
      <dt className="text-xs text-slate-600">{label}</dt>
      <dd className="text-lg font-semibold tabular-nums">{value}</dd>
      {detail ? <dd className="text-xs text-slate-600">{detail}</dd> : null}
    </div>
  );
}

function ShardCell({ shard: s, checkedAt, color }: { shard: ShardStatus; checkedAt: string; color: string | null }) {
  const expiresIn = s.expiresAt ? (new Date(s.expiresAt).getTime() - new Date(checkedAt).getTime()) / 1000 : null;
  const label = s.held
    ? `Shard ${s.shard}: held by ${s.holder}${s.region ? ` in ${s.region}` : ""}, epoch ${s.epoch}, lease expires in ${seconds(Math.max(0, expiresIn ?? 0))}, due work from ${s.dueIndex === "index" ? "the Redis index" : s.dueIndex === "polling" ? "polling Postgres" : "unknown"}`
    : `Shard ${s.shard}: not held${s.holder ? ` (last holder ${s.holder}, lease expired)` : ""}, epoch ${s.epoch}`;
  return (
    <li aria-label={label} title={label} data-testid="shard" data-held={s.held} data-holder={s.holder ?? ""}
      className={`min-w-0 rounded-md border p-1.5 text-xs text-slate-900 ${color ?? "border-dashed border-slate-400 bg-slate-50"}`}>
      <p className="flex items-baseline justify-between gap-1">
        <span className="font-semibold">{s.shard}</span>
        {s.dueIndex === "index" || s.dueIndex === "polling" ? <span className={s.dueIndex === "polling" ? "font-semibold text-amber-900" : ""}>{s.dueIndex === "index" ? "I" : "P"}</span> : null}
      </p>
      <p className="truncate">e{s.epoch}</p>
      <p className="truncate">{s.held ? seconds(Math.max(0, expiresIn ?? 0)) : "free"}</p>
    </li>
  );
}

const READY_STYLE: Record<string, string> = {
  ready: "bg-emerald-100 text-emerald-800",
  not_ready: "bg-red-100 text-red-800",
  unreachable: "bg-red-100 text-red-800",
  starting: "bg-amber-100 text-amber-900",
  shutting_down: "bg-amber-100 text-amber-900",
  unknown: "bg-slate-100 text-slate-700",
};

function NodeList({ title, id, nodes, empty }: { title: string; id: string; nodes: NodeStatus[]; empty: string }) {
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby={id}>
      <h2 id={id} className="mb-3 font-medium">{title}</h2>
      {nodes.length === 0 ? (
        <p className="rounded-md border border-dashed border-slate-300 p-4 text-sm text-slate-600">{empty}</p>
      ) : (
        <ul className="divide-y divide-slate-100" data-testid={`${id}-list`}>
          {nodes.map((n) => (
            <li key={n.id} className="py-3" data-testid="node" data-role={n.role} data-ready={n.readiness.status === "ready"}>
              <p className="flex flex-wrap items-center gap-2">
                <code className="break-all text-sm font-medium">{n.id}</code>
                <span className={`rounded px-1.5 py-0.5 text-xs ${READY_STYLE[n.readiness.status] ?? READY_STYLE.unknown}`} data-testid="readiness">
                  {n.readiness.status.replace("_", " ")}{n.readiness.httpStatus ? ` (${n.readiness.httpStatus})` : ""}
                </span>
                {!n.live ? <span className="rounded bg-red-100 px-1.5 py-0.5 text-xs text-red-800">heartbeat expired</span> : null}
              </p>
              <p className="text-xs text-slate-600">
                {n.region ? `${n.region} · ` : ""}version {n.version ?? "unknown"} · last heartbeat {seconds(n.heartbeatAgeSeconds)} ago · started {formatTime(n.startedAt)}
                {n.role === "scheduler" ? ` · ${n.shards.length} shard${n.shards.length === 1 ? "" : "s"}${n.shards.length ? `: ${n.shards.join(", ")}` : ""}` : ""}
              </p>
              {n.readiness.checks.length > 0 ? <p className="text-xs text-slate-600">checks passed: {n.readiness.checks.join(", ")}</p> : null}
              {Object.keys(n.readiness.failed).length > 0 ? (
                <ul className="mt-1 text-xs text-red-800" aria-label={`Failing checks of ${n.id}`}>
                  {Object.entries(n.readiness.failed).map(([check, why]) => <li key={check} className="break-words"><span className="font-medium">{check}</span>: {why}</li>)}
                </ul>
              ) : null}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
