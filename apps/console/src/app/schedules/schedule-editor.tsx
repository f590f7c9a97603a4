"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import type { Schedule } from "@tick/contract";
import { FormError, optionalNumber, placeErrors, QueueSelect, TextAreaField, TextField } from "@/components/form-fields";
import { headerLines, parseHeaderLines } from "@/components/header-lines";
import { buttonClass, consoleApi as api, inputClass, ok, primaryButtonClass } from "@/components/ui";
import { describeCron, SchedulePreview } from "./schedule-preview";

const GAP = {
  shift_forward: "A time that does not exist when clocks spring forward (02:30 on a changeover night) fires at the first valid instant after the gap.",
  skip: "A time that does not exist when clocks spring forward does not fire that day.",
} as const;
const OVERLAP = {
  first: "A time that happens twice when clocks fall back fires once, on its first pass (still summer time).",
  last: "A time that happens twice when clocks fall back fires once, on its second pass (standard time).",
  both: "A time that happens twice when clocks fall back fires on both passes.",
} as const;
const MISFIRE = {
  skip: "Occurrences missed while no scheduler could run are dropped; the schedule carries on from now.",
  run_latest: "Missed occurrences run once, for the latest, and its job says how many it stands for.",
  catch_up: "Each missed occurrence runs (at most the most recent “max catch-up” of them), released at the normal dispatch rate.",
} as const;

/** Every IANA zone this browser knows, for the picker (typing filters the list). */
function zones(): string[] {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return ["UTC", "Europe/London", "Europe/Paris", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"];
  }
}

/** Where an API error path is shown on this form (nested job fields go to their input). */
function fieldOf(path: string): string {
  if (path.startsWith("job.target.headers")) return "headers";
  if (path.startsWith("job.target.")) return path.slice("job.target.".length);
  if (path.startsWith("job.")) return path.slice("job.".length);
  return path;
}
const PLACED = new Set(["name", "queue", "cron", "timezone", "url", "method", "headers", "body", "maxAttempts", "priority", "callbackUrl", "flowKey", "maxCatchUp", "misfireThresholdMs"]);

function Choice<T extends string>({ legend, name, value, options, onChange }: { legend: string; name: string; value: T; options: Record<T, string>; onChange: (v: T) => void }) {
  return (
    <fieldset className="space-y-1.5">
      <legend className="text-sm font-medium text-slate-800">{legend}</legend>
      {(Object.keys(options) as T[]).map((k) => (
        <label key={k} className="flex items-start gap-2 text-sm">
          <input type="radio" className="mt-1" name={name} value={k} checked={value === k} onChange={() => onChange(k)} />
          <span><code className="text-xs">{k}</code>: <span className="text-slate-700">{options[k]}</span></span>
        </label>
      ))}
    </fieldset>
  );
}

/**
 * Create or edit a schedule: the rule in words as it is typed, a searchable zone, the DST and misfire
 * policies each explained in a sentence, and a live preview of the next fire times with DST effects marked.
 */
export function ScheduleEditor({ existing, onSaved }: { existing?: Schedule; onSaved?: (s: Schedule) => void }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const template = (existing?.job ?? {}) as { target?: { method?: string; url?: string; headers?: Record<string, string>; body?: string | null }; maxAttempts?: number; priority?: number; callbackUrl?: string; flowKey?: string };
  const [form, setForm] = useState({
    name: existing?.name ?? "",
    queue: existing?.queue ?? "default",
    cron: existing?.cron ?? "0 9 * * 1-5",
    timezone: existing?.timezone ?? (typeof Intl !== "undefined" ? Intl.DateTimeFormat().resolvedOptions().timeZone : "UTC"),
    dstGapPolicy: existing?.dstGapPolicy ?? ("shift_forward"),
    dstOverlapPolicy: existing?.dstOverlapPolicy ?? ("first"),
    misfirePolicy: existing?.misfirePolicy ?? ("skip"),
    maxCatchUp: String(existing?.maxCatchUp ?? 10),
    misfireThresholdMs: String(existing?.misfireThresholdMs ?? 60_000),
    method: template.target?.method ?? "POST",
    url: template.target?.url ?? "",
    headers: headerLines(template.target?.headers),
    body: template.target?.body ?? "",
    maxAttempts: template.maxAttempts !== undefined ? String(template.maxAttempts) : "",
    priority: template.priority !== undefined ? String(template.priority) : "",
    callbackUrl: template.callbackUrl ?? "",
    flowKey: template.flowKey ?? "",
  });
  const [local, setLocal] = useState<Record<string, string>>({});
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));
  const zoneList = useMemo(() => zones(), []);
  const description = describeCron(form.cron);

  const save = useMutation({
    mutationFn: async (body: Record<string, unknown>) =>
      existing ? ok(api().call("updateSchedule", { params: { id: existing.id }, body: body })) : ok(api().call("createSchedule", { body: body })),
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: ["schedules"] });
      void queryClient.invalidateQueries({ queryKey: ["schedule", saved.id] });
      if (onSaved) onSaved(saved);
      else router.push(`/schedules/${saved.id}`);
    },
  });
  const { errors, unplaced, problem } = placeErrors(save.error, PLACED, fieldOf, local);
  if (problem?.type?.endsWith("/conflict")) errors.name ??= problem.message;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const headers = parseHeaderLines(form.headers);
    if (headers.error) return setLocal({ headers: headers.error });
    setLocal({});
    const num = optionalNumber;
    // The saved template keeps what this form does not show (backoff, metadata, expiry, dependency).
    const kept = Object.fromEntries(Object.entries(existing?.job ?? {}).filter(([k, v]) => v !== null && !["target", "maxAttempts", "priority", "callbackUrl", "flowKey"].includes(k)));
    const job = {
      ...kept,
      target: { method: form.method, url: form.url.trim(), headers: headers.headers, ...(form.body ? { body: form.body } : {}) },
      ...(num(form.maxAttempts) !== undefined ? { maxAttempts: num(form.maxAttempts) } : {}),
      ...(num(form.priority) !== undefined ? { priority: num(form.priority) } : {}),
      ...(form.callbackUrl.trim() ? { callbackUrl: form.callbackUrl.trim() } : {}),
      ...(form.flowKey.trim() ? { flowKey: form.flowKey.trim() } : {}),
    };
    const rule = {
      cron: form.cron.trim(), timezone: form.timezone.trim(), dstGapPolicy: form.dstGapPolicy, dstOverlapPolicy: form.dstOverlapPolicy,
      misfirePolicy: form.misfirePolicy, maxCatchUp: num(form.maxCatchUp), misfireThresholdMs: num(form.misfireThresholdMs), job,
    };
    save.mutate(existing ? rule : { name: form.name.trim(), queue: form.queue, ...rule });
  };

  const input = (name: keyof typeof form, label: string, props: Record<string, unknown> = {}, hint?: ReactNode) => (
    <TextField name={name} label={label} value={String(form[name])} onChange={(v) => setForm((f) => ({ ...f, [name]: v }))} error={errors[name]} hint={hint} {...props} />
  );

  return (
    <form className="grid gap-6 lg:grid-cols-[1fr_26rem]" onSubmit={submit} noValidate aria-label={existing ? "Edit schedule" : "New schedule"}>
      <div className="min-w-0 space-y-5">
        <fieldset className="grid gap-4 sm:grid-cols-2">
          <legend className="mb-2 text-sm font-semibold">Rule</legend>
          {existing ? null : input("name", "Name", { required: true, placeholder: "nightly-report" })}
          {existing ? null : (
            <QueueSelect value={form.queue} onChange={(v) => setForm((f) => ({ ...f, queue: v }))} error={errors.queue} />
          )}
          {input("cron", "Cron rule", { className: `${inputClass} font-mono`, spellCheck: false, "data-testid": "cron-input" },
            <span data-testid="cron-description">{description ?? "Not a valid rule yet: 5 fields (minute hour day month weekday), or 6 with seconds first."}</span>)}
          {input("timezone", "Time zone (IANA)", { list: "tz-list", spellCheck: false, "data-testid": "zone-input" }, "Type to search, e.g. Paris or New_York.")}
          <datalist id="tz-list">{zoneList.map((z) => <option key={z} value={z} />)}</datalist>
        </fieldset>

        <Choice legend="When a time does not exist (DST gap)" name="gap" value={form.dstGapPolicy} options={GAP} onChange={(v) => setForm((f) => ({ ...f, dstGapPolicy: v }))} />
        <Choice legend="When a time happens twice (DST overlap)" name="overlap" value={form.dstOverlapPolicy} options={OVERLAP} onChange={(v) => setForm((f) => ({ ...f, dstOverlapPolicy: v }))} />
        <Choice legend="After downtime (misfires)" name="misfire" value={form.misfirePolicy} options={MISFIRE} onChange={(v) => setForm((f) => ({ ...f, misfirePolicy: v }))} />
        <div className="grid gap-4 sm:grid-cols-2">
          {input("maxCatchUp", "Max catch-up", { inputMode: "numeric" }, "With catch_up: at most this many missed occurrences run.")}
          {input("misfireThresholdMs", "Misfire threshold (ms)", { inputMode: "numeric" }, "Later than this, an occurrence counts as missed.")}
        </div>

        <fieldset className="grid gap-4 sm:grid-cols-[8rem_1fr]">
          <legend className="mb-2 text-sm font-semibold">The job each occurrence creates</legend>
          <label className="block text-sm font-medium text-slate-800">Method
            <select className={inputClass} value={form.method} onChange={set("method")}>{["POST", "GET", "PUT", "PATCH", "DELETE"].map((m) => <option key={m}>{m}</option>)}</select>
          </label>
          {input("url", "Target URL", { type: "url", placeholder: "https://api.example.com/reports" })}
          <div className="sm:col-span-2">
            <TextAreaField name="headers" label="Headers" rows={2} value={form.headers} onChange={(v) => setForm((f) => ({ ...f, headers: v }))} error={errors.headers} placeholder="Authorization: Bearer …" />
          </div>
          <div className="sm:col-span-2">
            <TextAreaField name="body" label="Body" value={form.body} onChange={(v) => setForm((f) => ({ ...f, body: v }))} error={errors.body} />
          </div>
        </fieldset>
        <div className="grid gap-4 sm:grid-cols-3">
          {input("maxAttempts", "Max attempts", { inputMode: "numeric", placeholder: "queue default" })}
          {input("priority", "Priority", { inputMode: "numeric", placeholder: "0" })}
          {input("callbackUrl", "Callback URL", { type: "url", placeholder: "https://…" })}
          <div className="sm:col-span-3">
            {input("flowKey", "Flow key", { placeholder: "e.g. customer-42", "data-testid": "schedule-flow-key" },
              "Each occurrence's job carries this key: the queue's per-key limits and fair share apply to it. A schedule has no debounce: each occurrence is its own job.")}
          </div>
        </div>

        <FormError error={save.error} unplaced={unplaced} what="The schedule" />
        <div className="flex gap-2">
          <button type="submit" className={primaryButtonClass} disabled={save.isPending} data-testid="save-schedule">{save.isPending ? "Saving…" : existing ? "Save changes" : "Create schedule"}</button>
          {existing && onSaved ? <button type="button" className={buttonClass} onClick={() => onSaved(existing)}>Cancel</button> : null}
        </div>
      </div>
      <aside className="min-w-0 rounded-lg border border-slate-200 bg-slate-50 p-4" aria-label="Preview">
        <SchedulePreview rule={{ cron: form.cron, timezone: form.timezone, dstGapPolicy: form.dstGapPolicy, dstOverlapPolicy: form.dstOverlapPolicy }} />
      </aside>
    </form>
  );
}
