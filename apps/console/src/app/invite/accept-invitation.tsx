"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import { signIn } from "next-auth/react";
import Link from "next/link";
import { useRouter } from "next/navigation";
import type { FormEvent } from "react";
import { useFragmentToken } from "@/components/fragment-token";
import { ApiProblem, consoleApi, formatTime, inputClass, ok, primaryButtonClass } from "@/components/ui";

/** Reads the token from the link's fragment, shows what it grants, and joins with a password. */
export function AcceptInvitation() {
  const router = useRouter();
  const token = useFragmentToken();
  const preview = useQuery({
    queryKey: ["invitation", token],
    enabled: typeof token === "string",
    retry: false,
    queryFn: () => ok(consoleApi().call("previewInvitation", { body: { token: token! } })),
  });
  const accept = useMutation({
    mutationFn: async (input: { password: string; name?: string }) => {
      const joined = await ok(consoleApi().call("acceptInvitation", { body: { token: token!, ...input } }));
      const signedIn = await signIn("credentials", { email: joined.user.email, password: input.password, redirect: false });
      if (!signedIn?.ok) throw new Error("Joined, but signing in failed: sign in with your email and password.");
      return joined;
    },
    onSuccess: () => {
      router.replace("/");
      router.refresh();
    },
  });

  if (token === undefined || (token && preview.isPending)) {
    return <p role="status" className="text-sm text-slate-600">Checking the invitation…</p>;
  }
  if (!token || preview.error) {
    return (
      <div role="alert" className="space-y-3 text-sm">
        <p>{preview.error?.message ?? "This link has no invitation in it. Open the exact link you were sent."}</p>
        <p><Link href="/login" className="font-medium text-indigo-700 hover:underline">Go to sign in</Link></p>
      </div>
    );
  }
  const invitation = preview.data!;
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const password = form.get("password");
    const name = form.get("name");
    accept.mutate({ password: typeof password === "string" ? password : "", ...(typeof name === "string" && name.trim() ? { name: name.trim() } : {}) });
  };
  const fields = accept.error instanceof ApiProblem ? accept.error.fields : {};
  return (
    <div className="space-y-4">
      <p className="text-sm" data-testid="invitation-summary">
        You are invited to <strong>{invitation.tenant.name}</strong> as <strong>{invitation.role}</strong>, as {invitation.email}.
        <span className="block text-xs text-slate-600">The link expires {formatTime(invitation.expiresAt)}.</span>
      </p>
      <form onSubmit={submit} className="space-y-4" aria-label="Accept the invitation">
        {invitation.accountExists ? null : (
          <label className="block text-sm font-medium">
            Your name <span className="font-normal text-slate-600">(optional)</span>
            <input name="name" maxLength={100} autoComplete="name" className={inputClass} />
          </label>
        )}
        <label className="block text-sm font-medium">
          {invitation.accountExists ? "Your password" : "Choose a password (at least 12 characters)"}
          <input name="password" type="password" required minLength={12} autoComplete={invitation.accountExists ? "current-password" : "new-password"} className={inputClass} />
          {fields.password ? <span className="mt-1 block text-xs text-red-700">{fields.password}</span> : null}
        </label>
        {accept.error ? <p role="alert" className="text-sm text-red-700">{accept.error.message}</p> : null}
        <button type="submit" disabled={accept.isPending} className={`w-full ${primaryButtonClass} py-2`}>
          {accept.isPending ? "Joining…" : `Join ${invitation.tenant.name}`}
        </button>
      </form>
    </div>
  );
}
