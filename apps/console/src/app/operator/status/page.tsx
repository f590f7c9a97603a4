import { ConsoleHeader } from "@/components/console-header";
import { requireConsoleUser } from "@/components/console-page";
import { OperatorTabs } from "../operator-tabs";
import { PlatformStatusView } from "./platform-status-view";

export const dynamic = "force-dynamic";

/** Platform operators: the shard map, schedulers and workers with their readiness, outbox lag, open breakers. */
export default async function OperatorStatusPage() {
  const user = await requireConsoleUser();
  return (
    <main className="mx-auto max-w-6xl p-4 sm:p-6">
      <ConsoleHeader user={user} membership={user.current} current="/operator" />
      {user.platformOperator ? (
        <>
          <OperatorTabs current="/operator/status" />
          <PlatformStatusView />
        </>
      ) : (
        <p className="text-slate-600" data-testid="not-operator">This page is for the platform&apos;s operators. Your account is not one.</p>
      )}
    </main>
  );
}
