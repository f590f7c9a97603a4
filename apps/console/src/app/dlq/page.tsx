import { redirect } from "next/navigation";
import { ConsoleHeader } from "@/components/console-header";
import { getConsoleUser } from "@/server/auth";
import { DlqConsole } from "./dlq-console";

export const dynamic = "force-dynamic";

/** Dead jobs and their governed replay. What a user may do is decided again by the API on every call. */
export default async function DlqPage() {
  const user = await getConsoleUser();
  if (!user) redirect("/login");
  const membership = user.current;
  return (
    <main className="mx-auto max-w-6xl p-6">
      <ConsoleHeader user={user} membership={membership} current="/dlq" />
      {membership ? (
        <DlqConsole canReplay={membership.role !== "viewer"} />
      ) : (
        <p className="text-slate-600">You are not a member of any tenant yet.</p>
      )}
    </main>
  );
}
