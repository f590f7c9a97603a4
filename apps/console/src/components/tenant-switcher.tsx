"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useTransition } from "react";
import { switchTenant } from "@/app/actions";
import type { ConsoleMembership } from "@/server/auth";

/** For people in several tenants: which one the console shows (remembered per user). */
export function TenantSwitcher({ memberships, currentId }: { memberships: ConsoleMembership[]; currentId: string | undefined }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const [pending, startTransition] = useTransition();
  return (
    <label className="flex items-center gap-2 text-sm text-slate-600">
      Tenant
      <select
        className="max-w-[14rem] rounded-md border border-slate-300 bg-white px-2 py-1 text-sm text-slate-900"
        value={currentId}
        disabled={pending}
        data-testid="tenant-switcher"
        onChange={(e) => {
          const id = e.target.value;
          startTransition(async () => {
            await switchTenant(id);
            // What the pages fetched belongs to the previous tenant.
            queryClient.clear();
            router.refresh();
          });
        }}
      >
        {memberships.map((m) => (
          <option key={m.tenantId} value={m.tenantId}>
            {m.tenantName} ({m.role})
          </option>
        ))}
      </select>
    </label>
  );
}
