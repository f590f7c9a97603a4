"use client";

import { useState, type FormEvent } from "react";
import { formatTime } from "@/components/ui";

interface Problem {
  title?: string;
  detail?: string;
  errors?: { path: string; message: string }[];
}

interface Requested {
  status: "verification_sent";
  email: string;
  expiresAt: string;
}

const input = "mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none";

/**
 * Sign-up: the form, then "check your email". The tenant is made when the mailed link is opened
 * (/signup/verify), which shows the first API key.
 */
export function SignUpForm() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [sent, setSent] = useState<{ email: string; tenantName: string; expiresAt: string }>();

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const field = (name: string) => {
      const value = form.get(name);
      return typeof value === "string" ? value.trim() : "";
    };
    const body = {
      tenantName: field("tenantName"),
      ...(field("slug") ? { slug: field("slug") } : {}),
      ...(field("name") ? { name: field("name") } : {}),
      email: field("email"),
      password: typeof form.get("password") === "string" ? (form.get("password") as string) : "",
    };
    setPending(true);
    setError(undefined);
    setFieldErrors({});
    try {
      const res = await fetch("/api/v1/signup", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const json = (await res.json()) as Requested & Problem;
      if (res.status === 202) {
        setSent({ email: json.email, tenantName: body.tenantName, expiresAt: json.expiresAt });
        return;
      }
      const errors: Record<string, string> = {};
      for (const e of json.errors ?? []) errors[e.path.split(".")[0]!] ??= e.message;
      setFieldErrors(errors);
      setError(json.detail ?? json.title ?? `Sign-up failed (HTTP ${res.status}).`);
    } catch {
      setError("Could not reach the server. Try again.");
    } finally {
      setPending(false);
    }
  }

  if (sent) {
    return (
      <div className="space-y-3 text-sm" data-testid="signup-check-email" role="status">
        <h2 className="text-lg font-semibold">Check your email</h2>
        <p>
          We sent a link to <strong className="break-all">{sent.email}</strong>. Open it to create <strong>{sent.tenantName}</strong> and
          get its first API key.
        </p>
        <p className="text-slate-600">The link works once and expires {formatTime(sent.expiresAt)}. Nothing is created until it is opened.</p>
        <p className="text-slate-600">
          No email? Check your spam folder, or{" "}
          <button type="button" onClick={() => setSent(undefined)} className="font-medium text-indigo-700 hover:underline">
            sign up again
          </button>
          .
        </p>
      </div>
    );
  }

  const fieldError = (name: string) =>
    fieldErrors[name] ? <span id={`${name}-error`} className="mt-1 block text-xs text-red-700">{fieldErrors[name]}</span> : null;
  const described = (name: string) => (fieldErrors[name] ? { "aria-invalid": true, "aria-describedby": `${name}-error` } : {});

  return (
    <form onSubmit={(event) => void onSubmit(event)} className="space-y-4" noValidate>
      <label className="block text-sm font-medium">
        Team or company name
        <input name="tenantName" required maxLength={100} autoComplete="organization" className={input} {...described("tenantName")} />
        {fieldError("tenantName")}
      </label>
      <label className="block text-sm font-medium">
        Tenant ID <span className="font-normal text-slate-500">(optional: lowercase, digits, hyphens)</span>
        <input name="slug" maxLength={40} pattern="[a-z0-9]+(-[a-z0-9]+)*" className={input} {...described("slug")} />
        {fieldError("slug")}
      </label>
      <label className="block text-sm font-medium">
        Your name <span className="font-normal text-slate-500">(optional)</span>
        <input name="name" maxLength={100} autoComplete="name" className={input} />
      </label>
      <label className="block text-sm font-medium">
        Email
        <input name="email" type="email" required autoComplete="username" className={input} {...described("email")} />
        {fieldError("email")}
      </label>
      <label className="block text-sm font-medium">
        Password <span className="font-normal text-slate-600">(at least 12 characters, not a common one)</span>
        <input name="password" type="password" required minLength={12} autoComplete="new-password" className={input} {...described("password")} />
        {fieldError("password")}
      </label>
      {error ? <p role="alert" className="text-sm text-red-700">{error}</p> : null}
      <button type="submit" disabled={pending}
        className="w-full rounded-md bg-indigo-600 px-3 py-2 text-sm font-semibold text-white hover:bg-indigo-500 disabled:opacity-60">
        {pending ? "Sending…" : "Create account"}
      </button>
    </form>
  );
}
