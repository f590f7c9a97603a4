"use client";

import { useMutation } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent, type ReactNode } from "react";
import { FormError, optionalNumber, placeErrors, QueueSelect, TextAreaField, TextField } from "@/components/form-fields";
import { parseHeaderLines } from "@/components/header-lines";
import { consoleApi as api, FieldError, inputClass, ok, primaryButtonClass } from "@/components/ui";

const METHODS = ["POST", "GET", "PUT", "PATCH", "DELETE"] as const;

const DEBOUNCE_HINT = {
  off: "Creates with the same debounce key in this queue fold into one job. Not with a run time or a delay.",
  trailing: "The job runs once creates with its key stop for the window, with the latest create's request.",
  leading: "The first create's job runs at once; creates with its key within the window return that job.",
} as const;

/** The fields this form shows an API error at; any other error is listed above the submit button. */
const PLACED = new Set(["url", "method", "headers", "body", "timeoutMs", "runAt", "delayMs", "expiresAt", "queue", "priority", "maxAttempts", "backoff", "callbackUrl", "dependencyKey", "flowKey", "debounce", "debounceKey", "debounceSeconds", "debounceMaxWaitSeconds"]);

/** Where an API error path is shown: the form's field for it (nested paths go to their nearest field). */
function fieldOf(path: string): string {
  if (path.startsWith("target.headers")) return "headers";
  if (path.startsWith("target.")) return path.slice("target.".length);
  if (path.startsWith("backoff")) return "backoff";
  if (path === "debounce.key") return "debounceKey";
  if (path === "debounce.periodMs") return "debounceSeconds";
  if (path === "debounce.maxWaitMs") return "debounceMaxWaitSeconds";
  if (path.startsWith("debounce")) return "debounce";
  return path;
}

export function NewJobForm() {
  const router = useRouter();
  const [form, setForm] = useState({
    queue: "default", method: "POST" as (typeof METHODS)[number], url: "", headers: "", body: "", when: "now" as "now" | "at" | "delay",
    runAt: "", delaySeconds: "60", priority: "0", maxAttempts: "", backoff: "default" as "default" | "exponential" | "fixed", baseMs: "1000", maxMs: "3600000",
    expiresAt: "", idempotencyKey: "", callbackUrl: "", dependencyKey: "", timeoutMs: "",
    flowKey: "", debounce: "off" as "off" | "trailing" | "leading", debounceKey: "", debounceSeconds: "30", debounceMaxWaitSeconds: "",
  });
  const [local, setLocal] = useState<Record<string, string>>({});
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [k]: e.target.value }));

  const create = useMutation({
    mutationFn: (body: Record<string, unknown>) => ok(api().call("createJob", { body: body, ...(form.idempotencyKey.trim() ? { idempotencyKey: form.idempotencyKey.trim() } : {}) })),
    onSuccess: (job) => router.push(`/jobs/${job.id}${job.debouncedInto ? "?debounced=1" : ""}`),
  });
  const { errors, unplaced } = placeErrors(create.error, PLACED, fieldOf, local);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const headers = parseHeaderLines(form.headers);
    if (headers.error) {
      setLocal({ headers: headers.error });
      return;
    }
    setLocal({});
    const num = optionalNumber;
    create.mutate({
      queue: form.queue,
      target: {
        method: form.method,
        url: form.url.trim(),
        headers: headers.headers,
        ...(form.body ? { body: form.body } : {}),
        ...(num(form.timeoutMs) !== undefined ? { timeoutMs: num(form.timeoutMs) } : {}),
      },
      ...(form.when === "at" && form.runAt ? { runAt: new Date(form.runAt).toISOString() } : {}),
      ...(form.when === "delay" ? { delayMs: Math.round(Number(form.delaySeconds) * 1000) } : {}),
      priority: num(form.priority) ?? 0,
      ...(num(form.maxAttempts) !== undefined ? { maxAttempts: num(form.maxAttempts) } : {}),
      ...(form.backoff !== "default" ? { backoff: { strategy: form.backoff, baseMs: num(form.baseMs), maxMs: num(form.maxMs), jitter: "full" } } : {}),
      ...(form.expiresAt ? { expiresAt: new Date(form.expiresAt).toISOString() } : {}),
      ...(form.callbackUrl.trim() ? { callbackUrl: form.callbackUrl.trim() } : {}),
      ...(form.dependencyKey.trim() ? { dependencyKey: form.dependencyKey.trim() } : {}),
      ...(form.flowKey.trim() ? { flowKey: form.flowKey.trim() } : {}),
      ...(form.debounce !== "off"
        ? {
            debounce: {
              key: form.debounceKey.trim(),
              periodMs: Math.round(Number(form.debounceSeconds) * 1000),
              mode: form.debounce,
              ...(form.debounceMaxWaitSeconds.trim() ? { maxWaitMs: Math.round(Number(form.debounceMaxWaitSeconds) * 1000) } : {}),
            },
          }
        : {}),
    });
  };

  const input = (name: keyof typeof form, label: string, props: Record<string, unknown> = {}, hint?: ReactNode) => (
    <TextField name={name} label={label} value={String(form[name])} onChange={(v) => setForm((f) => ({ ...f, [name]: v }))} error={errors[name]} hint={hint} {...props} />
  );

  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="new-job-heading">
      <p className="mb-3 text-sm"><Link href="/jobs" className="text-indigo-700 underline">← All jobs</Link></p>
      <h2 id="new-job-heading" className="mb-1 font-medium">New job</h2>
      <p className="mb-4 text-sm text-slate-600">One HTTP request to your endpoint, retried with backoff until it succeeds or its attempts run out.</p>
      <form className="space-y-5" onSubmit={submit} noValidate aria-label="New job">
        <fieldset className="grid gap-4 sm:grid-cols-[8rem_1fr]">
          <legend className="mb-2 text-sm font-semibold">Request</legend>
          <label className="block text-sm font-medium text-slate-800">Method
            <select className={inputClass} value={form.method} onChange={set("method")}>{METHODS.map((m) => <option key={m}>{m}</option>)}</select>
          </label>
          {input("url", "Target URL", { type: "url", required: true, placeholder: "https://api.example.com/tasks" }, "Public http(s) addresses only: private, loopback and link-local ones are refused.")}
          <div className="sm:col-span-2">
            <TextAreaField name="headers" label="Headers" value={form.headers} onChange={(v) => setForm((f) => ({ ...f, headers: v }))} error={errors.headers}
              placeholder={"Authorization: Bearer …\nX-Team: billing"} hint="One per line. Tick adds Idempotency-Key, Tick-Attempt-Id, Tick-Fencing-Token and a signature." />
          </div>
          <div className="sm:col-span-2">
            <TextAreaField name="body" label="Body" rows={4} value={form.body} onChange={(v) => setForm((f) => ({ ...f, body: v }))} error={errors.body} placeholder='{"orderId": 42}' />
          </div>
          <div className="sm:col-span-2">{input("timeoutMs", "Timeout (ms)", { inputMode: "numeric", placeholder: "the queue's default" })}</div>
        </fieldset>

        <fieldset className="grid gap-4 sm:grid-cols-2">
          <legend className="mb-2 text-sm font-semibold">When</legend>
          <div className="space-y-1 text-sm sm:col-span-2" role="radiogroup" aria-label="When to run">
            {([["now", "Now"], ["at", "At a time"], ["delay", "After a delay"]] as const).map(([value, label]) => (
              <label key={value} className="mr-4 inline-flex items-center gap-2">
                <input type="radio" name="when" value={value} checked={form.when === value} onChange={() => setForm((f) => ({ ...f, when: value }))} /> {label}
              </label>
            ))}
          </div>
          {form.when === "at" ? input("runAt", "Run at (your browser's zone)", { type: "datetime-local" }) : null}
          {form.when === "delay" ? input("delaySeconds", "Delay (seconds)", { inputMode: "numeric" }) : null}
          {errors.delayMs ? <FieldError id="err-delayMs" message={errors.delayMs} /> : null}
          {input("expiresAt", "Expires at (optional)", { type: "datetime-local" }, "Not started by then, it ends as expired.")}
        </fieldset>

        <fieldset className="grid gap-4 sm:grid-cols-3">
          <legend className="mb-2 text-sm font-semibold">Delivery</legend>
          <QueueSelect value={form.queue} onChange={(v) => setForm((f) => ({ ...f, queue: v }))} error={errors.queue} />
          {input("priority", "Priority", { inputMode: "numeric" }, "−1000 to 1000; higher goes first.")}
          {input("maxAttempts", "Max attempts", { inputMode: "numeric", placeholder: "the queue's default" })}
          <label className="block text-sm font-medium text-slate-800">Backoff
            <select className={inputClass} value={form.backoff} onChange={set("backoff")} aria-describedby={errors.backoff ? "err-backoff" : undefined}>
              <option value="default">The queue&apos;s default</option>
              <option value="exponential">Exponential</option>
              <option value="fixed">Fixed</option>
            </select>
            <FieldError id="err-backoff" message={errors.backoff} />
          </label>
          {form.backoff !== "default" ? (
            <>
              {input("baseMs", "Base delay (ms)", { inputMode: "numeric" })}
              {input("maxMs", "Longest delay (ms)", { inputMode: "numeric" })}
            </>
          ) : null}
        </fieldset>

        <fieldset className="grid gap-4 sm:grid-cols-3">
          <legend className="mb-2 text-sm font-semibold">Identity and callbacks</legend>
          {input("idempotencyKey", "Idempotency key", { placeholder: "e.g. order-42" }, "The same key again returns this job instead of a second one.")}
          {input("callbackUrl", "Callback URL", { type: "url", placeholder: "https://…" }, "Gets a signed webhook when the job finishes.")}
          {input("dependencyKey", "Dependency", { placeholder: "the target's host" }, "Its circuit breaker; defaults to the target's host.")}
        </fieldset>

        <fieldset className="grid gap-4 sm:grid-cols-3">
          <legend className="mb-2 text-sm font-semibold">Flow control</legend>
          {input("flowKey", "Flow key", { placeholder: "e.g. customer-42" }, "What this job isolates in its queue: the queue's per-key limits and fair share apply per key.")}
          <label className="block text-sm font-medium text-slate-800">Debounce
            <select className={inputClass} value={form.debounce} onChange={set("debounce")} aria-describedby={errors.debounce ? "err-debounce hint-debounce" : "hint-debounce"}>
              <option value="off">Off</option>
              <option value="trailing">Trailing</option>
              <option value="leading">Leading</option>
            </select>
            <span id="hint-debounce" className="mt-1 block text-xs font-normal text-slate-600">{DEBOUNCE_HINT[form.debounce]}</span>
            <FieldError id="err-debounce" message={errors.debounce} />
          </label>
          {form.debounce !== "off" ? (
            <>
              {input("debounceKey", "Debounce key", { placeholder: "e.g. sync:acct-1" })}
              {input("debounceSeconds", "Window (seconds)", { inputMode: "decimal" })}
              {form.debounce === "trailing" ? input("debounceMaxWaitSeconds", "Longest wait (seconds, optional)", { inputMode: "decimal" }, "The job runs at the latest this long after the window's first create.") : null}
            </>
          ) : null}
        </fieldset>

        <FormError error={create.error} unplaced={unplaced} what="The job" />
        <button type="submit" className={primaryButtonClass} disabled={create.isPending} data-testid="create-job">{create.isPending ? "Creating…" : "Create job"}</button>
      </form>
    </section>
  );
}
