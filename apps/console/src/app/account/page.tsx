import type { Metadata } from "next";
import { ConsoleHeader } from "@/components/console-header";
import { requireConsoleUser } from "@/components/console-page";
import { AccountConsole } from "./account-console";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Account · Tick console" };

/** The signed-in person's own account: where they are signed in, and their password. Not a tenant page. */
export default async function AccountPage() {
  const user = await requireConsoleUser();
  return (
    <main className="mx-auto max-w-5xl p-4 sm:p-6">
      <ConsoleHeader user={user} membership={user.current} current="/account" />
      <AccountConsole email={user.email} />
    </main>
  );
}
