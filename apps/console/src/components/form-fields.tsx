"use client";

import type { InputHTMLAttributes, ReactNode } from "react";
import { useQuery } from "@tanstack/react-query";
import { ApiProblem, consoleApi, FieldError, inputClass, ok } from "./ui";

/**
 * An API problem's field errors, placed on a form: each error path goes to the field `fieldOf` names when
 * the form shows that field, and the rest are listed above the submit button (nothing is dropped).
 */
export function placeErrors(error: Error | null, placed: ReadonlySet<string>, fieldOf: (path: string) => string, local: Record<string, string> = {}) {
  const errors: Record<string, string> = { ...local };
  const unplaced: [string, string][] = [];
  const problem = error instanceof ApiProblem ? error : null;
  for (const [path, message] of Object.entries(problem?.paths ?? {})) {
    const field = fieldOf(path);
    if (placed.has(field)) errors[field] ??= message;
    else unplaced.push([path, message]);
  }
  return { errors, unplaced, problem };
}

/** A field's label, hint and API error (tied to the control by aria-describedby), around any control. */
function FieldShell({ name, label, error, hint, children }: { name: string; label: string; error: string | undefined; hint?: ReactNode; children: ReactNode }) {
  return (
    <label className="block text-sm font-medium text-slate-800">
      {label}
      {children}
      {hint ? <span className="mt-1 block text-xs font-normal text-slate-600">{hint}</span> : null}
      <FieldError id={`err-${name}`} message={error} />
    </label>
  );
}

/** The accessibility attributes of a control whose API error is shown under it. */
const described = (name: string, error: string | undefined) => ({ "aria-invalid": error ? true : undefined, "aria-describedby": error ? `err-${name}` : undefined });

/** A labelled input with its hint and its API error. */
export function TextField({ name, label, value, onChange, error, hint, ...props }: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error: string | undefined;
  hint?: ReactNode;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "onChange" | "value" | "name">) {
  return (
    <FieldShell name={name} label={label} error={error} hint={hint}>
      <input className={inputClass} name={name} value={value} onChange={(e) => onChange(e.target.value)} {...described(name, error)} {...props} />
    </FieldShell>
  );
}

/** A labelled monospace text area (headers, bodies) with its hint and API error. */
export function TextAreaField({ name, label, value, onChange, error, hint, rows = 3, placeholder }: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error: string | undefined;
  hint?: ReactNode;
  rows?: number;
  placeholder?: string;
}) {
  return (
    <FieldShell name={name} label={label} error={error} hint={hint}>
      <textarea className={`${inputClass} font-mono`} rows={rows} value={value} onChange={(e) => onChange(e.target.value)} placeholder={placeholder} {...described(name, error)} />
    </FieldShell>
  );
}

/** The tenant's queues to pick from (shares the ["queues"] query with the other pages), with its API error. */
export function QueueSelect({ value, onChange, error }: { value: string; onChange: (value: string) => void; error: string | undefined }) {
  const queues = useQuery({ queryKey: ["queues"], queryFn: () => ok(consoleApi().call("listQueues", {})) });
  return (
    <FieldShell name="queue" label="Queue" error={error}>
      <select className={inputClass} value={value} onChange={(e) => onChange(e.target.value)} {...described("queue", error)}>
        {(queues.data?.data ?? [{ name: "default" }]).map((q) => <option key={q.name}>{q.name}</option>)}
      </select>
    </FieldShell>
  );
}

/** Why a form's submission was refused: the API's message and the errors no field shows. */
export function FormError({ error, unplaced, what }: { error: Error | null; unplaced: [string, string][]; what: string }) {
  if (!error) return null;
  return (
    <div role="alert" className="rounded-md bg-red-50 p-2 text-sm text-red-800" data-testid="form-error">
      <p>{what} was not saved: {error.message}</p>
      {unplaced.length > 0 ? <ul className="mt-1 list-disc pl-5">{unplaced.map(([path, message]) => <li key={path}>{path ? `${path}: ` : ""}{message}</li>)}</ul> : null}
    </div>
  );
}

/** A number field's value for the API: undefined when left empty. */
export const optionalNumber = (v: string) => (v.trim() === "" ? undefined : Number(v));
