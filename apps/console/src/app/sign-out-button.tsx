"use client";

import { signOut } from "next-auth/react";

export function SignOutButton() {
  return (
    <button onClick={() => void signOut({ callbackUrl: "/login" }).catch((err: unknown) => console.error("sign-out failed", err))}
      className="rounded-md border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-100">
      Sign out
    </button>
  );
}
