import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { getConsoleUser, type ConsoleMembership, type ConsoleUser } from "@/server/auth";
import { ConsoleHeader } from "./console-header";

/** The signed-in user, or off to the login page. */
export async function requireConsoleUser(): Promise<ConsoleUser> {
  const user = await getConsoleUser();
  if (!user) redirect("/login");
  return user;
}

/**
 * One console page about the current tenant: the same width, header and navigation everywhere, and the
 * same words for someone who belongs to no tenant yet. `children` renders the page for the tenant shown.
 */
export function TenantPage({ user, path, wide = false, children }: { user: ConsoleUser; path: string; wide?: boolean; children: (membership: ConsoleMembership) => ReactNode }) {
  return (
    <main className={`mx-auto ${wide ? "max-w-6xl" : "max-w-5xl"} p-4 sm:p-6`}>
      <ConsoleHeader user={user} membership={user.current} current={path} />
      {user.current ? children(user.current) : <p className="text-slate-600">You are not a member of any tenant yet. Ask an owner to invite you.</p>}
    </main>
  );
}
