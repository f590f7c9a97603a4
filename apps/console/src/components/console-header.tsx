import Link from "next/link";
import type { ConsoleMembership, ConsoleUser } from "@/server/auth";
import { SignOutButton } from "@/app/sign-out-button";
import { TenantSwitcher } from "./tenant-switcher";

const NAV = [
  { href: "/", label: "Dashboard" },
  { href: "/jobs", label: "Jobs" },
  { href: "/schedules", label: "Schedules" },
  { href: "/queues", label: "Queues" },
  { href: "/dlq", label: "Dead letters" },
  { href: "/keys", label: "API keys" },
  { href: "/webhooks", label: "Webhooks" },
  { href: "/members", label: "Members" },
  { href: "/audit", label: "Audit log" },
  { href: "/settings", label: "Settings" },
  { href: "/docs/api", label: "API reference" },
];

/** The signed-in person's own page (their sessions, their password), beside Sign out. */
const ACCOUNT = { href: "/account", label: "Account" };

/** The console's top bar: who is signed in to which tenant (and as what), the pages, their account, sign out. */
export function ConsoleHeader({ user, membership, current }: { user: ConsoleUser; membership: ConsoleMembership | undefined; current: string }) {
  return (
    <header className="mb-8 flex flex-wrap items-center justify-between gap-x-6 gap-y-3">
      <div className="min-w-0">
        <h1 className="text-2xl font-semibold">Tick</h1>
        <p className="break-words text-sm text-slate-500">
          Signed in as {user.email}
          {membership ? ` · ${membership.tenantName} (${membership.role})` : ""}
        </p>
      </div>
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2">
        {user.memberships.length > 1 ? <TenantSwitcher memberships={user.memberships} currentId={membership?.tenantId} /> : null}
        <nav className="flex flex-wrap items-center gap-x-4 gap-y-2" aria-label="Console">
          {[...NAV, ...(user.platformOperator ? [{ href: "/operator", label: "Operator" }] : []), ACCOUNT].map((item) => (
            <Link key={item.href} href={item.href} aria-current={item.href === current ? "page" : undefined}
              className={`text-sm hover:underline ${item.href === current ? "font-medium text-slate-900" : "text-slate-600 hover:text-slate-900"}`}>
              {item.label}
            </Link>
          ))}
          <SignOutButton />
        </nav>
      </div>
      {membership?.suspended ? (
        <p role="alert" className="w-full rounded-md border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800" data-testid="tenant-suspended">
          {membership.tenantName} is suspended by the platform&apos;s operators: its API keys are refused and its jobs wait (nothing is lost) until it is resumed.
        </p>
      ) : null}
    </header>
  );
}
