import Link from "next/link";
import { getEnv } from "@/server/env";
import { LoginForm } from "./login-form";

export const dynamic = "force-dynamic";

const RATE_LIMITED = "Too many sign-in attempts. Wait a few minutes and try again.";

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ error?: string }> }) {
  const { error } = await searchParams;
  return (
    <main className="flex min-h-screen items-center justify-center p-6">
      <div className="w-full max-w-sm rounded-xl border border-slate-200 bg-white p-8 shadow-sm">
        <h1 className="mb-1 text-2xl font-semibold">Sign in to Tick</h1>
        <p className="mb-6 text-sm text-slate-500">The console for your schedules, jobs and dead letters.</p>
        <LoginForm initialError={error === "RateLimited" ? RATE_LIMITED : error ? "Wrong email or password." : undefined} />
        {getEnv().TICK_SIGNUP === "open" ? (
          <p className="mt-6 text-sm text-slate-600">
            New to Tick?{" "}
            <Link href="/signup" className="font-medium text-indigo-700 hover:underline">Create an account</Link>
          </p>
        ) : null}
      </div>
    </main>
  );
}
