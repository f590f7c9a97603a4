import { VerifySignup } from "./verify-signup";

export const dynamic = "force-dynamic";

/** Where a sign-up confirmation link lands (public): the token is in the URL fragment, read by the page only. */
export default function VerifySignupPage() {
  return (
    <main className="flex min-h-screen items-center justify-center p-4 sm:p-6">
      <div className="w-full max-w-md rounded-xl border border-slate-200 bg-white p-6 shadow-sm sm:p-8">
        <h1 className="mb-4 text-2xl font-semibold">Confirm your Tick sign-up</h1>
        <VerifySignup />
      </div>
    </main>
  );
}
