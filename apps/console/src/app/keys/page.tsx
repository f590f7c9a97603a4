import { redirect } from "next/navigation";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { ConsoleHeader } from "@/components/console-header";
import { getConsoleUser } from "@/server/auth";
import { KeysConsole } from "./keys-console";

export const dynamic = "force-dynamic";

/** The tenant's API keys. What a user may do is decided again by the API on every call. */
export default async function KeysPage() {
  const user = await getConsoleUser();
  if (!user) redirect("/login");
  const membership = user.current;
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <ConsoleHeader user={user} membership={membership} current="/keys" />
      {membership ? (
        <KeysConsole
          key={membership.tenantId}
          canWrite={hasScope(ROLE_SCOPES[membership.role], "keys:write")}
          grantable={[...ROLE_SCOPES[membership.role]]}
        />
      ) : (
        <p className="text-slate-600">You are not a member of any tenant yet.</p>
      )}
    </main>
  );
}
