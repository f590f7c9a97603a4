import { redirect } from "next/navigation";
import { hasScope, ROLE_SCOPES } from "@tick/contract";
import { ConsoleHeader } from "@/components/console-header";
import { getConsoleUser } from "@/server/auth";
import { MembersConsole } from "./members-console";

export const dynamic = "force-dynamic";

/** The tenant's people: members with their roles, invitations. The API decides again on every call. */
export default async function MembersPage() {
  const user = await getConsoleUser();
  if (!user) redirect("/login");
  const membership = user.current;
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <ConsoleHeader user={user} membership={membership} current="/members" />
      {membership ? (
        <MembersConsole
          key={membership.tenantId}
          me={user.id}
          myRole={membership.role}
          canManage={hasScope(ROLE_SCOPES[membership.role], "members:write")}
        />
      ) : (
        <p className="text-slate-600">You are not a member of any tenant yet.</p>
      )}
    </main>
  );
}
