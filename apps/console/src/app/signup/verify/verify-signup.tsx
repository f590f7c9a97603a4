"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useFragmentToken } from "@/components/fragment-token";
import { consoleApi, ok } from "@/components/ui";
import { FirstKey } from "../first-key";

/**
 * Reads the token from the link's fragment and confirms it once: the tenant is created and its first API key
 * shown. The confirmation is a query that never refetches (a second POST of the token would be a 404).
 */
export function VerifySignup() {
  const token = useFragmentToken();
  const confirmed = useQuery({
    queryKey: ["verify-signup", token],
    enabled: typeof token === "string",
    retry: false,
    staleTime: Infinity,
    gcTime: Infinity,
    refetchOnMount: false,
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
    queryFn: () => ok(consoleApi().call("verifySignup", { body: { token: token! } })),
  });

  if (token === undefined || (token && confirmed.isPending)) {
    return <p role="status" className="text-sm text-slate-600">Creating your tenant…</p>;
  }
  if (!token || confirmed.error) {
    return (
      <div role="alert" className="space-y-3 text-sm" data-testid="signup-verify-error">
        <p>{confirmed.error?.message ?? "This link has no confirmation in it. Open the exact link from the email."}</p>
        <p>
          <Link href="/login" className="font-medium text-indigo-700 hover:underline">Sign in</Link>
          {" or "}
          <Link href="/signup" className="font-medium text-indigo-700 hover:underline">sign up again</Link>
        </p>
      </div>
    );
  }
  return <FirstKey result={confirmed.data!} />;
}
