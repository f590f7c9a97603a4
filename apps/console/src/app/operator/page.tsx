import { ConsoleHeader } from "@/components/console-header";
import { requireConsoleUser } from "@/components/console-page";
import { OperatorConsole } from "./operator-console";
import { OperatorTabs } from "./operator-tabs";

export const dynamic = "force-dynamic";

/** Platform operators: every tenant, its limits and state. Not a tenant page: no tenant role grants it. */
export default async function OperatorPage() {
  const user = await requireConsoleUser();
  return (
    <main className="mx-auto max-w-6xl p-4 sm:p-6">
      <ConsoleHeader user={user} membership={user.current} current="/operator" />
      {user.platformOperator ? (
        <>
          <OperatorTabs current="/operator" />
          <OperatorConsole />
        </>
      ) : (
        <p className="text-slate-600" data-testid="not-operator">This page is for the platform&apos;s operators. Your account is not one.</p>
      )}
    </main>
  );
}
