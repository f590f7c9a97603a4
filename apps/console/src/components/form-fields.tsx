"use client";

import type { InputHTMLAttributes, ReactNode } from "react";
import { ApiProblem, FieldError, inputClass } from "./ui";

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

/** A labelled input with its hint and its API error (tied by aria-describedby). */
export function TextField({ name, label, value, onChange, error, hint, ...props }: {
  name: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error: string | undefined;
  hint?: ReactNode;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "onChange" | "value" | "name">) {
  return (
    <label className="block text-sm font-medium text-slate-800">
      {label}
      <input className={inputClass} name={name} value={value} onChange={(e) => onChange(e.target.value)} aria-invalid={error ? true : undefined}
        aria-describedby={error ? `err-${name}` : undefined} {...props} />
      {hint ? <span className="mt-1 block text-xs font-normal text-slate-600">{hint}</span> : null}
      <FieldError id={`err-${name}`} message={error} />
    </label>
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
    <label className="block text-sm font-medium text-slate-800">
      {label}
      <textarea className={`${inputClass} font-mono`} rows={rows} value={value} onChange={(e) => onChange(e.target.value)} placeholder={placeholder}
        aria-invalid={error ? true : undefined} aria-describedby={error ? `err-${name}` : undefined} />
      {hint ? <span className="mt-1 block text-xs font-normal text-slate-600">{hint}</span> : null}
      <FieldError id={`err-${name}`} message={error} />
    </label>
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
