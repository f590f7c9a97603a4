import Link from "next/link";
import { getEnv } from "@/server/env";
import { SignUpForm } from "./signup-form";

export const dynamic = "force-dynamic";

export default function SignUpPage() {
  const mode = getEnv().TICK_SIGNUP;
  return (
    <main className="flex min-h-screen items-center justify-center p-4 sm:p-6">
      <div className="w-full max-w-md rounded-xl border border-slate-200 bg-white p-6 shadow-sm sm:p-8">
        <h1 className="mb-1 text-2xl font-semibold">Create your Tick account</h1>
        {mode === "open" ? (
          <>
            <p className="mb-6 text-sm text-slate-600">
              A tenant for your team, with you as its owner and a first API key. We email you a link to confirm the address first.
            </p>
            <SignUpForm />
          </>
        ) : (
          <p className="mb-2 text-sm text-slate-600" data-testid="signup-closed">
            {mode === "invite" ? "Sign-up is by invitation only: ask a member of your team to invite you." : "Sign-up is closed on this deployment."}
          </p>
        )}
        <p className="mt-6 text-sm text-slate-600">
          Already have an account?{" "}
          <Link href="/login" className="font-medium text-indigo-700 hover:underline">Sign in</Link>
        </p>
      </div>
    </main>
  );
}
