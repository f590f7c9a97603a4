import { LoginForm } from "./login-form";

export const dynamic = "force-dynamic";

export default async function LoginPage({ searchParams }: { searchParams: Promise<{ error?: string }> }) {
  const { error } = await searchParams;
  return (
    <main className="flex min-h-screen items-center justify-center p-6">
      <div className="w-full max-w-sm rounded-xl border border-slate-200 bg-white p-8 shadow-sm">
        <h1 className="mb-1 text-2xl font-semibold">Sign in to Tick</h1>
        <p className="mb-6 text-sm text-slate-500">The console for your schedules, jobs and dead letters.</p>
        <LoginForm initialError={error ? "Wrong email or password." : undefined} />
      </div>
    </main>
  );
}
