import { AcceptInvitation } from "./accept-invitation";

export const dynamic = "force-dynamic";

/** Where an invitation link lands (public): the token is in the URL fragment, read by the page only. */
export default function InvitePage() {
  return (
    <main className="flex min-h-screen items-center justify-center p-4 sm:p-6">
      <div className="w-full max-w-md rounded-xl border border-slate-200 bg-white p-6 shadow-sm sm:p-8">
        <h1 className="mb-4 text-2xl font-semibold">Join a team on Tick</h1>
        <AcceptInvitation />
      </div>
    </main>
  );
}
