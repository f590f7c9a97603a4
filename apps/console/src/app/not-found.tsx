import Link from "next/link";
import { ConsoleHeader } from "@/components/console-header";
import { getConsoleUser } from "@/server/auth";

export const dynamic = "force-dynamic";

/**
 * Any URL the console has no page for: a real page inside the console's layout (its navigation when
 * signed in, the way to sign in otherwise), answered with status 404, instead of Next's bare one.
 */
export default async function NotFound() {
  const user = await getConsoleUser().catch(() => null);
  return (
    <main className="mx-auto max-w-6xl p-6">
      {user ? (
        <ConsoleHeader user={user} membership={user.current} current="" />
      ) : (
        <h1 className="mb-8 text-2xl font-semibold">Tick</h1>
      )}
      <section aria-labelledby="not-found-title" className="rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
        <h2 id="not-found-title" className="text-xl font-semibold">
          Page not found
        </h2>
        <p className="mt-2 text-sm text-slate-600">There is no page at this address. It may have moved, or the link may be mistyped.</p>
        <p className="mt-4 text-sm">
          {user ? (
            <Link href="/" className="font-medium text-indigo-700 hover:underline">
              Go to the dashboard
            </Link>
          ) : (
            <Link href="/login" className="font-medium text-indigo-700 hover:underline">
              Sign in to Tick
            </Link>
          )}
        </p>
      </section>
    </main>
  );
}
