"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import type { Dependency, FlowKeyView, QueueWithStats } from "@tick/contract";
import { KeyBarsChart } from "@/components/key-bars-chart";
import { ApiProblem, buttonClass, consoleApi as api, FieldError, formatDuration, formatTime, ok, primaryButtonClass, QueryState, StatusBadge } from "@/components/ui";

/** Waiting work of a queue as one bar: due now, not due yet, in flight (the numbers are beside it too). */
function BacklogBar({ stats }: { stats: QueueWithStats["stats"] }) {
  const notYet = Math.max(0, stats.scheduled - stats.due);
  const total = stats.due + notYet + stats.inFlight;
  if (total === 0) return <div className="h-2 rounded bg-slate-100" aria-hidden="true" />;
  const part = (n: number, color: string, label: string) =>
    n > 0 ? <div className={color} style={{ width: `${(n / total) * 100}%` }} title={`${label}: ${n}`} /> : null;
  return (
    <div className="flex h-2 overflow-hidden rounded bg-slate-100" aria-hidden="true" data-testid="backlog-bar">
      {part(stats.inFlight, "bg-indigo-500", "in flight")}
      {part(stats.due, "bg-amber-500", "due now")}
      {part(notYet, "bg-slate-300", "not due yet")}
    </div>
  );
}

function QueueCard({ queue, canWrite }: { queue: QueueWithStats; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const initial = limitFields(queue);
  const [concurrency, setConcurrency] = useState(initial.concurrency);
  const [rate, setRate] = useState(initial.rate);
  const [perKey, setPerKey] = useState(initial.perKey);
  const [keyRate, setKeyRate] = useState(initial.keyRate);
  const [keyPeriod, setKeyPeriod] = useState(initial.keyPeriod);
  const [keyMode, setKeyMode] = useState(initial.keyMode);
  // A queue with per-key limits shows its keys at once; any other queue on demand.
  const [showKeys, setShowKeys] = useState(queue.perKeyConcurrency !== null || queue.perKeyRate !== null);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ["queues"] });
  const toggle = useMutation({
    mutationFn: () => ok(queue.paused ? api().call("resumeQueue", { params: { name: queue.name } }) : api().call("pauseQueue", { params: { name: queue.name } })),
    onSuccess: refresh,
  });
  const save = useMutation({
    mutationFn: () =>
      ok(api().call("updateQueue", {
        params: { name: queue.name },
        body: {
          concurrency: concurrency.trim() === "" ? null : Number(concurrency),
          ratePerSecond: rate.trim() === "" ? null : Number(rate),
          perKeyConcurrency: perKey.trim() === "" ? null : Number(perKey),
          perKeyRate: keyRate.trim() === "" ? null : { limit: Number(keyRate), periodMs: Number(keyPeriod) },
          perKeyRateMode: keyMode,
        },
      })),
    onSuccess: () => {
      setEditing(false);
      refresh();
    },
  });
  const fields = save.error instanceof ApiProblem ? save.error.fields : {};
  const s = queue.stats;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  // The editor opens on the limits in force now (the card refreshes every 5 s; another person may have changed them).
  const openEditor = () => {
    const now = limitFields(queue);
    setConcurrency(now.concurrency);
    setRate(now.rate);
    setPerKey(now.perKey);
    setKeyRate(now.keyRate);
    setKeyPeriod(now.keyPeriod);
    setKeyMode(now.keyMode);
    save.reset();
    setEditing(true);
  };
  const keysButton = (
    <button type="button" className={buttonClass} aria-expanded={showKeys} onClick={() => setShowKeys((v) => !v)} data-testid="show-keys">
      {showKeys ? "Hide keys" : "Keys"}<span className="sr-only"> of {queue.name}</span>
    </button>
  );
  return (
    <li className="rounded-lg border border-slate-200 p-4" data-testid="queue-card" data-queue={queue.name}>
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div className="min-w-0">
          <h3 className="flex flex-wrap items-center gap-2 font-medium"><span className="break-all">{queue.name}</span> <StatusBadge status={queue.paused ? "paused" : "active"} /></h3>
          <p className="mt-0.5 text-xs text-slate-600" data-testid="queue-limits">
            {queue.concurrency === null ? "no concurrency cap" : `at most ${queue.concurrency} in flight`} · {queue.ratePerSecond === null ? "no rate limit" : `at most ${queue.ratePerSecond}/s`} · {queue.defaultMaxAttempts} attempts by default
          </p>
          <p className="mt-0.5 text-xs text-slate-600" data-testid="queue-key-limits">Each flow key: {keyLimitsInWords(queue)}</p>
        </div>
        {canWrite ? (
          <div className="flex flex-wrap gap-2">
            <button type="button" className={buttonClass} disabled={toggle.isPending} onClick={() => toggle.mutate()} data-testid={queue.paused ? "resume-queue" : "pause-queue"}>
              {queue.paused ? "Resume" : "Pause"}<span className="sr-only"> queue {queue.name}</span>
            </button>
            {!editing ? <button type="button" className={buttonClass} onClick={openEditor} data-testid="edit-queue">Limits…<span className="sr-only"> of {queue.name}</span></button> : null}
            {keysButton}
          </div>
        ) : keysButton}
      </div>
      <dl className="mt-3 grid grid-cols-2 gap-x-4 gap-y-1 text-sm sm:grid-cols-4" data-testid="queue-stats">
        <div><dt className="text-xs text-slate-600">Due now</dt><dd className="font-medium" data-testid="stat-due">{s.due}</dd></div>
        <div><dt className="text-xs text-slate-600">Waiting in all</dt><dd className="font-medium">{s.scheduled}</dd></div>
        <div><dt className="text-xs text-slate-600">In flight</dt><dd className="font-medium" data-testid="stat-in-flight">{s.inFlight}</dd></div>
        <div><dt className="text-xs text-slate-600">Oldest due waited</dt><dd className="font-medium">{s.oldestDueAgeMs === null ? "—" : formatDuration(s.oldestDueAgeMs)}</dd></div>
      </dl>
      <div className="mt-2"><BacklogBar stats={s} /></div>
      {queue.paused && s.due > 0 ? <p className="mt-2 text-sm text-amber-900" data-testid="paused-waiting">Paused: {s.due} due job{s.due === 1 ? "" : "s"} wait{s.due === 1 ? "s" : ""} here until it is resumed; nothing is lost.</p> : null}
      {editing ? (
        <form className="mt-3 grid gap-3 rounded-md bg-slate-50 p-3 sm:grid-cols-2 lg:grid-cols-3" onSubmit={submit} aria-label={`Limits of ${queue.name}`}>
          <label className="text-sm font-medium text-slate-800">Concurrency
            <input className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" inputMode="numeric" value={concurrency} onChange={(e) => setConcurrency(e.target.value)} placeholder="no cap"
              aria-describedby={fields.concurrency ? `err-concurrency-${queue.name}` : undefined} />
            <FieldError id={`err-concurrency-${queue.name}`} message={fields.concurrency} />
          </label>
          <label className="text-sm font-medium text-slate-800">Rate (dispatches per second)
            <input className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" inputMode="decimal" value={rate} onChange={(e) => setRate(e.target.value)} placeholder="unlimited"
              aria-describedby={fields.ratePerSecond ? `err-rate-${queue.name}` : undefined} />
            <FieldError id={`err-rate-${queue.name}`} message={fields.ratePerSecond} />
          </label>
          <label className="text-sm font-medium text-slate-800">Per key: in flight
            <input className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" inputMode="numeric" value={perKey} onChange={(e) => setPerKey(e.target.value)} placeholder="no cap"
              aria-describedby={fields.perKeyConcurrency ? `err-per-key-${queue.name}` : undefined} data-testid="per-key-concurrency" />
            <FieldError id={`err-per-key-${queue.name}`} message={fields.perKeyConcurrency} />
          </label>
          <label className="text-sm font-medium text-slate-800">Per key: dispatches
            <input className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" inputMode="numeric" value={keyRate} onChange={(e) => setKeyRate(e.target.value)} placeholder="no rate"
              data-testid="per-key-rate" aria-describedby={fields.perKeyRate ? `err-key-rate-${queue.name}` : undefined} />
            <FieldError id={`err-key-rate-${queue.name}`} message={fields.perKeyRate} />
          </label>
          <div className="grid grid-cols-2 gap-2">
            <label className="text-sm font-medium text-slate-800">per (ms)
              <input className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" inputMode="numeric" value={keyPeriod} onChange={(e) => setKeyPeriod(e.target.value)} data-testid="per-key-rate-period" />
            </label>
            <label className="text-sm font-medium text-slate-800">beyond it
              <select className="mt-1 block w-full rounded-md border border-slate-300 px-2 py-1.5 text-sm" value={keyMode} onChange={(e) => setKeyMode(e.target.value as "delay" | "drop")}>
                <option value="delay">wait</option>
                <option value="drop">drop</option>
              </select>
            </label>
          </div>
          <div className="flex items-end gap-2">
            <button type="submit" className={primaryButtonClass} disabled={save.isPending} data-testid="save-queue">Save</button>
            <button type="button" className={buttonClass} onClick={() => setEditing(false)}>Cancel</button>
          </div>
          {save.error && Object.keys(fields).length === 0 ? <p role="alert" className="text-sm text-red-800 sm:col-span-2 lg:col-span-3">{save.error.message}</p> : null}
        </form>
      ) : null}
      {toggle.error ? <p role="alert" className="mt-2 text-sm text-red-800">{toggle.error.message}</p> : null}
      {showKeys ? <FlowKeysPanel queue={queue} canWrite={canWrite} /> : null}
    </li>
  );
}

const KEY_SORTS = [["backlog", "Most due", "most due first"], ["in_flight", "Most in flight", "most in flight first"], ["waiting", "Waiting longest", "longest waiting first"]] as const;
const KEY_FILTERS = [["all", "All keys"], ["paused", "Paused"], ["overridden", "With an override"]] as const;
type KeySort = (typeof KEY_SORTS)[number][0];
type KeyFilter = (typeof KEY_FILTERS)[number][0];

/** The limits editor's fields for a queue's limits as they are (empty: no limit). */
function limitFields(queue: QueueWithStats) {
  return {
    concurrency: queue.concurrency === null ? "" : String(queue.concurrency),
    rate: queue.ratePerSecond === null ? "" : String(queue.ratePerSecond),
    perKey: queue.perKeyConcurrency === null ? "" : String(queue.perKeyConcurrency),
    keyRate: queue.perKeyRate === null ? "" : String(queue.perKeyRate.limit),
    keyPeriod: queue.perKeyRate === null ? "1000" : String(queue.perKeyRate.periodMs),
    keyMode: queue.perKeyRateMode,
  };
}

/** "at most 2 in flight · 5 per 1.0 s, the rest wait": the limits a queue gives each of its flow keys. */
function keyLimitsInWords(queue: QueueWithStats): string {
  const cap = queue.perKeyConcurrency === null ? "no cap on in flight" : `at most ${queue.perKeyConcurrency} in flight`;
  const rate = queue.perKeyRate === null ? "no rate" : `${queue.perKeyRate.limit} per ${formatDuration(queue.perKeyRate.periodMs)}, ${queue.perKeyRateMode === "drop" ? "the rest dropped" : "the rest wait"}`;
  return `${cap} · ${rate}`;
}

/** A queue's top flow keys, live: a chart of backlog against in flight, the limits in force, and per key pause, override and reset. */
function FlowKeysPanel({ queue, canWrite }: { queue: QueueWithStats; canWrite: boolean }) {
  const [sort, setSort] = useState<KeySort>("backlog");
  const [filter, setFilter] = useState<KeyFilter>("all");
  const keys = useQuery({
    queryKey: ["flow-keys", queue.name, sort, filter],
    queryFn: () =>
      ok(api().call("listFlowKeys", {
        params: { name: queue.name },
        query: { sort, limit: 20, ...(filter === "paused" ? { paused: "true" as const } : {}), ...(filter === "overridden" ? { overridden: "true" as const } : {}) },
      })),
    refetchInterval: 5_000,
  });
  const rows = keys.data?.data ?? [];
  const totals = keys.data?.totals;
  const order = KEY_SORTS.find(([v]) => v === sort)![2];
  const charted = Math.min(10, rows.length);
  return (
    <section className="mt-4 min-w-0 rounded-md border border-slate-200 p-3" aria-labelledby={`keys-heading-${queue.name}`} data-testid="flow-keys">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <h4 id={`keys-heading-${queue.name}`} className="text-sm font-medium">Flow keys<span className="sr-only"> of {queue.name}</span></h4>
        <div className="flex flex-wrap items-center gap-2">
          <div className="flex flex-wrap gap-1" role="group" aria-label={`Order the keys of ${queue.name} by`}>
            {KEY_SORTS.map(([value, label]) => (
              <button key={value} type="button" aria-pressed={sort === value} onClick={() => setSort(value)} data-testid={`key-sort-${value}`}
                className={`rounded px-2 py-1 text-xs font-medium ${sort === value ? "bg-indigo-600 text-white" : "bg-slate-100 text-slate-800 hover:bg-slate-200"}`}>
                {label}
              </button>
            ))}
          </div>
          <label className="text-xs font-medium text-slate-700">
            <span className="sr-only">Show keys of {queue.name}</span>
            <select className="rounded border border-slate-300 bg-white px-1.5 py-1 text-xs" value={filter} onChange={(e) => setFilter(e.target.value as KeyFilter)} data-testid="key-filter">
              {KEY_FILTERS.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
            </select>
          </label>
        </div>
      </div>
      <p className="mt-1 text-xs text-slate-600">Each key gets {keyLimitsInWords(queue)}, unless its override says otherwise. Refreshed every 5 s.</p>
      {totals ? (
        <p className="mt-1 text-xs text-slate-700" data-testid="flow-key-totals">
          {totals.keysWithWork} key{totals.keysWithWork === 1 ? "" : "s"} with work · {totals.keysAtCap} held at their cap · {totals.keysPaused} paused
        </p>
      ) : null}
      <div className="mt-3">
        <QueryState isPending={keys.isPending} error={keys.error} isEmpty={rows.length === 0} retry={() => void keys.refetch()}
          empty={filter === "all" ? "No flow keys with work: jobs created with a flowKey in this queue show here, with their backlog and limits." : filter === "paused" ? "No paused key." : "No key has an override: every key follows the queue's limits."}>
          <KeyBarsChart keys={rows.slice(0, 10)} caption={`In flight against due now, ${charted === 1 ? "for the one key" : `for the top ${charted} keys`} (${order}); each row below has the figures.`} />
          <ul className="mt-3 divide-y divide-slate-100 border-t border-slate-100" data-testid="flow-key-list">
            {rows.map((k) => <FlowKeyRow key={k.key} queue={queue} flowKey={k} canWrite={canWrite} />)}
          </ul>
        </QueryState>
      </div>
    </section>
  );
}

/** What an override sets, in words: "in flight 5 · rate: the queue's · weight 3". */
function overrideInWords(o: NonNullable<FlowKeyView["override"]>): string {
  const parts = [
    o.concurrency === null ? "in flight: the queue's" : `in flight ${o.concurrency}`,
    o.rate === null ? "rate: the queue's" : `rate ${o.rate.limit} per ${formatDuration(o.rate.periodMs)}`,
    o.weight === null ? "weight: 1" : `weight ${o.weight}`,
  ];
  return parts.join(" · ");
}

function FlowKeyRow({ queue, flowKey: k, canWrite }: { queue: QueueWithStats; flowKey: FlowKeyView; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [concurrency, setConcurrency] = useState(k.override?.concurrency == null ? "" : String(k.override.concurrency));
  const [rateLimit, setRateLimit] = useState(k.override?.rate ? String(k.override.rate.limit) : "");
  const [ratePeriod, setRatePeriod] = useState(k.override?.rate ? String(k.override.rate.periodMs) : String(queue.perKeyRate?.periodMs ?? 1000));
  const [weight, setWeight] = useState(k.override?.weight == null ? "" : String(k.override.weight));
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ["flow-keys", queue.name] });
  const params = { name: queue.name, key: k.key };
  const pause = useMutation({ mutationFn: () => ok(api().call("putFlowKey", { params, body: { paused: !k.paused } })), onSuccess: refresh });
  const reset = useMutation({ mutationFn: () => ok(api().call("deleteFlowKey", { params })), onSuccess: refresh });
  const save = useMutation({
    mutationFn: () =>
      ok(api().call("putFlowKey", {
        params,
        body: {
          concurrency: concurrency.trim() === "" ? null : Number(concurrency),
          rate: rateLimit.trim() === "" ? null : { limit: Number(rateLimit), periodMs: Number(ratePeriod) },
          weight: weight.trim() === "" ? null : Number(weight),
        },
      })),
    onSuccess: () => {
      setEditing(false);
      refresh();
    },
  });
  const fields = save.error instanceof ApiProblem ? save.error.fields : {};
  // A paused key is held by its pause, whatever its cap.
  const atCap = !k.paused && k.concurrency !== null && k.inFlight >= k.concurrency && k.due > 0;
  const id = `${queue.name}-${k.key}`.replace(/[^A-Za-z0-9_-]/g, "_");
  const error = pause.error ?? reset.error;
  const input = "mt-1 block w-full rounded-md border border-slate-300 bg-white px-2 py-1 text-sm";
  return (
    <li className="py-2.5" data-testid="flow-key-row" data-key={k.key}>
      <div className="flex flex-col gap-2 sm:flex-row sm:items-start sm:justify-between">
        <div className="min-w-0 flex-1">
          <p className="flex flex-wrap items-center gap-2 text-sm">
            <code className="break-all">{k.key}</code>
            {k.paused ? <StatusBadge status="paused" /> : null}
            {atCap ? <span className="rounded bg-amber-100 px-1.5 py-0.5 text-xs font-medium text-amber-900" data-testid="key-at-cap">held at its cap</span> : null}
            {k.override ? <span className="rounded bg-indigo-100 px-1.5 py-0.5 text-xs font-medium text-indigo-900" data-testid="key-overridden">override</span> : null}
          </p>
          <p className="mt-1 text-xs text-slate-700" data-testid="flow-key-figures">
            {k.due} due · {k.inFlight}{k.concurrency === null ? "" : ` of ${k.concurrency}`} in flight · {k.scheduled} waiting in all
            {k.oldestDueAgeMs !== null ? ` · oldest due waited ${formatDuration(k.oldestDueAgeMs)}` : ""}
            {k.rate ? ` · ${k.rate.limit} per ${formatDuration(k.rate.periodMs)}` : ""} · weight {k.weight}
          </p>
          {k.override ? (
            <p className="mt-0.5 text-xs text-slate-600" data-testid="flow-key-override">
              Override since {formatTime(k.override.setAt)}: {overrideInWords(k.override)}{k.override.paused ? " · paused" : ""}
            </p>
          ) : null}
        </div>
        {canWrite ? (
          <div className="flex flex-wrap gap-2">
            <button type="button" className={buttonClass} disabled={pause.isPending} onClick={() => pause.mutate()} data-testid={k.paused ? "resume-key" : "pause-key"}>
              {k.paused ? "Resume" : "Pause"}<span className="sr-only"> key {k.key}</span>
            </button>
            {!editing ? <button type="button" className={buttonClass} onClick={() => setEditing(true)} data-testid="override-key">Override…<span className="sr-only"> key {k.key}</span></button> : null}
            {k.override ? (
              <button type="button" className={buttonClass} disabled={reset.isPending} onClick={() => reset.mutate()} data-testid="reset-key">
                Reset to queue defaults<span className="sr-only"> (key {k.key})</span>
              </button>
            ) : null}
          </div>
        ) : null}
      </div>
      {editing ? (
        <form className="mt-2 grid grid-cols-2 gap-2 rounded-md bg-slate-50 p-2 sm:grid-cols-[repeat(4,minmax(0,1fr))_auto]" aria-label={`Override of key ${k.key}`}
          onSubmit={(e) => { e.preventDefault(); save.mutate(); }}>
          <p className="col-span-2 text-xs text-slate-700 sm:col-span-5">Empty fields follow the queue ({keyLimitsInWords(queue)}, weight 1). An in-flight cap of 0 holds the key&apos;s jobs.</p>
          <label className="text-xs font-medium text-slate-800">In flight at once
            <input className={input} inputMode="numeric" value={concurrency} onChange={(e) => setConcurrency(e.target.value)}
              placeholder={queue.perKeyConcurrency === null ? "no cap" : `queue: ${queue.perKeyConcurrency}`}
              aria-invalid={fields.concurrency ? true : undefined} aria-describedby={fields.concurrency ? `err-kc-${id}` : undefined} data-testid="key-concurrency" />
            <FieldError id={`err-kc-${id}`} message={fields.concurrency} />
          </label>
          <label className="text-xs font-medium text-slate-800">Dispatches
            <input className={input} inputMode="numeric" value={rateLimit} onChange={(e) => setRateLimit(e.target.value)}
              placeholder={queue.perKeyRate === null ? "no rate" : `queue: ${queue.perKeyRate.limit}`}
              aria-invalid={fields.rate ? true : undefined} aria-describedby={fields.rate ? `err-kr-${id}` : undefined} data-testid="key-rate" />
            <FieldError id={`err-kr-${id}`} message={fields.rate} />
          </label>
          <label className="text-xs font-medium text-slate-800">per (ms)
            <input className={input} inputMode="numeric" value={ratePeriod} onChange={(e) => setRatePeriod(e.target.value)} data-testid="key-rate-period" />
          </label>
          <label className="text-xs font-medium text-slate-800">Weight
            <input className={input} inputMode="numeric" value={weight} onChange={(e) => setWeight(e.target.value)} placeholder="1"
              aria-invalid={fields.weight ? true : undefined} aria-describedby={fields.weight ? `err-kw-${id}` : undefined} data-testid="key-weight" />
            <FieldError id={`err-kw-${id}`} message={fields.weight} />
          </label>
          <div className="col-span-2 flex items-end gap-2 sm:col-span-1">
            <button type="submit" className={primaryButtonClass} disabled={save.isPending} data-testid="save-key">Save</button>
            <button type="button" className={buttonClass} onClick={() => setEditing(false)}>Cancel</button>
          </div>
          {save.error && Object.keys(fields).length === 0 ? <p role="alert" className="col-span-2 text-sm text-red-800 sm:col-span-5">{save.error.message}</p> : null}
        </form>
      ) : null}
      {error ? <p role="alert" className="mt-1 text-sm text-red-800">{error.message}</p> : null}
    </li>
  );
}

function BreakerBadge({ breaker }: { breaker: Dependency["breaker"] }) {
  if (!breaker) return <span className="text-xs text-slate-600">breaker state unknown (store did not answer)</span>;
  if (breaker.state === "open") return <span className="inline-block rounded bg-red-100 px-1.5 py-0.5 text-xs font-medium text-red-900">breaker open until {formatTime(breaker.openUntil, { precise: true })}</span>;
  if (breaker.state === "half_open") return <span className="inline-block rounded bg-amber-100 px-1.5 py-0.5 text-xs font-medium text-amber-900">breaker half-open: probing</span>;
  return <span className="inline-block rounded bg-emerald-100 px-1.5 py-0.5 text-xs font-medium text-emerald-900">breaker closed</span>;
}

function DependencyRow({ dep, canWrite }: { dep: Dependency; canWrite: boolean }) {
  const queryClient = useQueryClient();
  const toggle = useMutation({
    mutationFn: () => ok(dep.paused ? api().call("resumeDependency", { params: { key: dep.key } }) : api().call("pauseDependency", { params: { key: dep.key }, body: {} })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["dependencies"] });
      void queryClient.invalidateQueries({ queryKey: ["queues"] });
    },
  });
  return (
    <li className="flex flex-wrap items-center justify-between gap-3 py-2.5" data-testid="dependency-row" data-dependency={dep.key}>
      <div className="min-w-0">
        <p className="flex flex-wrap items-center gap-2 text-sm"><code className="break-all">{dep.key}</code> <BreakerBadge breaker={dep.breaker} /> {dep.paused ? <StatusBadge status="paused" /> : null}</p>
        <p className="text-xs text-slate-600">{dep.due} due · {dep.inFlight} in flight{dep.paused && dep.pausedAt ? ` · paused ${formatTime(dep.pausedAt)}${dep.reason ? `: ${dep.reason}` : ""}` : ""}</p>
      </div>
      {canWrite ? (
        <button type="button" className={buttonClass} disabled={toggle.isPending} onClick={() => toggle.mutate()} data-testid={dep.paused ? "resume-dependency" : "pause-dependency"}>
          {dep.paused ? "Resume its jobs" : "Pause its jobs"}<span className="sr-only"> ({dep.key})</span>
        </button>
      ) : null}
      {toggle.error ? <p role="alert" className="w-full text-sm text-red-800">{toggle.error.message}</p> : null}
    </li>
  );
}

export function QueuesConsole({ canWrite }: { canWrite: boolean }) {
  const queues = useQuery({ queryKey: ["queues"], queryFn: () => ok(api().call("listQueues", {})), refetchInterval: 5_000 });
  const deps = useQuery({ queryKey: ["dependencies"], queryFn: () => ok(api().call("listDependencies", {})), refetchInterval: 5_000 });
  const rows = (queues.data?.data ?? []) as QueueWithStats[];
  const depRows = deps.data?.data ?? [];
  return (
    <div className="space-y-6">
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="queues-heading">
        <h2 id="queues-heading" className="font-medium">Queues</h2>
        <p className="mb-4 text-sm text-slate-600">
          Live figures, refreshed every 5 s. A paused queue&apos;s jobs wait, scheduled; the other queues keep running. The rate is enforced in every one-second window, across all schedulers.
        </p>
        <ul className="mb-3 flex flex-wrap gap-x-4 gap-y-1 text-xs text-slate-700" aria-label="Bar key">
          <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-2.5 w-4 rounded-sm bg-indigo-500" />in flight</li>
          <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-2.5 w-4 rounded-sm bg-amber-500" />due now</li>
          <li className="inline-flex items-center gap-1.5"><span aria-hidden="true" className="h-2.5 w-4 rounded-sm bg-slate-300" />not due yet</li>
        </ul>
        <QueryState isPending={queues.isPending} error={queues.error} isEmpty={rows.length === 0} retry={() => void queues.refetch()} empty="No queues yet: one named default is made with the tenant.">
          <ul className="space-y-3" data-testid="queue-list">{rows.map((q) => <QueueCard key={q.name} queue={q} canWrite={canWrite} />)}</ul>
        </QueryState>
      </section>
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="deps-heading">
        <h2 id="deps-heading" className="font-medium">Dependencies</h2>
        <p className="mb-3 text-sm text-slate-600">
          The services your jobs call (by default the target&apos;s host), with their circuit breakers. Pausing one holds only its jobs, in every queue, while the rest keep running.
        </p>
        <QueryState isPending={deps.isPending} error={deps.error} isEmpty={depRows.length === 0} retry={() => void deps.refetch()} empty="No dependency yet: one appears when a job is waiting for or calling it.">
          <ul className="divide-y divide-slate-100" data-testid="dependency-list">{depRows.map((d) => <DependencyRow key={d.key} dep={d} canWrite={canWrite} />)}</ul>
        </QueryState>
      </section>
    </div>
  );
}
