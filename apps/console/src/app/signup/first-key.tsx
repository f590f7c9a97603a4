"use client";

import Link from "next/link";
import { CopySecret } from "@/components/copy-secret";

export interface SignedUp {
  tenant: { id: string; slug: string; name: string };
  user: { id: string; email: string };
  firstKey: { key: string };
}

/** A new tenant's first API key, shown once, then into the console (sign-in first when not signed in). */
export function FirstKey({ result }: { result: SignedUp }) {
  return (
    <div className="space-y-4" data-testid="signup-done">
      <p className="text-sm">
        Tenant <strong>{result.tenant.name}</strong> (<code className="break-all">{result.tenant.slug}</code>) is ready, with a default queue,
        and <span className="break-all">{result.user.email}</span> is its owner.
      </p>
      <div>
        <h2 className="text-sm font-medium">Your first API key</h2>
        <p className="mb-2 text-xs text-slate-600">It holds every scope. It is shown only now: store it somewhere safe.</p>
        <CopySecret value={result.firstKey.key} label="First API key" />
      </div>
      <Link href="/" className="block w-full rounded-md bg-indigo-600 px-3 py-2 text-center text-sm font-semibold text-white hover:bg-indigo-500">
        Continue to the console
      </Link>
      <p className="text-xs text-slate-600">Not signed in yet? The console asks for your email and password first.</p>
    </div>
  );
}
