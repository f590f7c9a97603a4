"use client";

import { signIn } from "next-auth/react";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { CopySecret } from "@/components/copy-secret";

interface Problem {
  title?: string;
  detail?: string;
  errors?: { path: string; message: string }[];
}

interface SignedUp {
  tenant: { id: string; slug: string; name: string };
  user: { id: string; email: string };
  firstKey: { key: string; apiKey: { prefix: string } };
}

const input = "mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none";

/** Sign-up: the form, then the first API key shown once, then into the console signed in. */
export function SignUpForm() {
  const router = useRouter();
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const [fieldErrors, setFieldErrors] = useState<Record<string, string>>({});
  const [done, setDone] = useState<{ result: SignedUp; email: string; password: string }>();

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
      const json = (await res.json()) as SignedUp & Problem;
      if (res.status === 201) {
        setDone({ result: json, email: body.email, password: body.password });
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

  async function enterConsole() {
    if (!done) return;
    setPending(true);
    const result = await signIn("credentials", { email: done.email, password: done.password, redirect: false }).catch(() => null);
    setPending(false);
    if (result?.ok && !result.error) {
      router.replace("/");
      router.refresh();
    } else {
      router.replace("/login");
    }
  }

  if (done) {
    return (
      <div className="space-y-4" data-testid="signup-done">
        <p className="text-sm">
          Tenant <strong>{done.result.tenant.name}</strong> (<code>{done.result.tenant.slug}</code>) is ready, with a default queue.
        </p>
        <div>
          <h2 className="text-sm font-medium">Your first API key</h2>
          <p className="mb-2 text-xs text-slate-600">It holds every scope. It is shown only now: store it somewhere safe.</p>
          <CopySecret value={done.result.firstKey.key} label="First API key" />
        </div>
        <button type="button" onClick={() => void enterConsole()} disabled={pending}
          className="w-full rounded-md bg-indigo-600 px-3 py-2 text-sm font-semibold text-white hover:bg-indigo-500 disabled:opacity-60">
          {pending ? "Opening…" : "Continue to the console"}
        </button>
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
        Password <span className="font-normal text-slate-500">(at least 12 characters)</span>
        <input name="password" type="password" required minLength={12} autoComplete="new-password" className={input} {...described("password")} />
        {fieldError("password")}
      </label>
      {error ? <p role="alert" className="text-sm text-red-700">{error}</p> : null}
      <button type="submit" disabled={pending}
        className="w-full rounded-md bg-indigo-600 px-3 py-2 text-sm font-semibold text-white hover:bg-indigo-500 disabled:opacity-60">
        {pending ? "Creating…" : "Create account"}
      </button>
    </form>
  );
}
