import Link from "next/link";

const TABS = [
  { href: "/operator", label: "Tenants" },
  { href: "/operator/status", label: "Status" },
];

/** The operator pages: tenants and their limits, and the platform's status. */
export function OperatorTabs({ current }: { current: string }) {
  return (
    <nav aria-label="Operator" className="mb-4 flex gap-2 border-b border-slate-200">
      {TABS.map((t) => (
        <Link key={t.href} href={t.href} aria-current={t.href === current ? "page" : undefined}
          className={`-mb-px border-b-2 px-3 py-2 text-sm ${t.href === current ? "border-indigo-600 font-medium text-slate-900" : "border-transparent text-slate-600 hover:text-slate-900"}`}>
          {t.label}
        </Link>
      ))}
    </nav>
  );
}
