"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { CONSOLE_ROLES, type ConsoleRole, type Invitation, type Member } from "@tick/contract";
import { CopySecret } from "@/components/copy-secret";
import { ApiProblem, buttonClass, consoleApi, formatTime, inputClass, ok, primaryButtonClass, QueryState } from "@/components/ui";

const ROLE_HELP: Record<ConsoleRole, string> = {
  owner: "everything, including owners and the tenant itself",
  admin: "everything but owners",
  operator: "runs the work: jobs, schedules, queues, DLQ replay",
  viewer: "reads only",
};

export function MembersConsole({ me, myRole, canManage }: { me: string; myRole: ConsoleRole; canManage: boolean }) {
  const members = useQuery({ queryKey: ["members"], queryFn: () => ok(consoleApi().call("listMembers", {})) });
  return (
    <div className="space-y-6">
      <Invite canManage={canManage} myRole={myRole} />
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="members">
        <h2 id="members" className="mb-4 font-medium">Members</h2>
        <QueryState isPending={members.isPending} error={members.error} isEmpty={(members.data?.data.length ?? 0) === 0} empty="No members." retry={() => void members.refetch()}>
          <MemberList members={members.data?.data ?? []} me={me} myRole={myRole} canManage={canManage} />
        </QueryState>
      </section>
      <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="invitations">
        <h2 id="invitations" className="mb-4 font-medium">Invitations</h2>
        <QueryState isPending={members.isPending} error={members.error} isEmpty={(members.data?.invitations.length ?? 0) === 0} empty="No invitations yet." retry={() => void members.refetch()}>
          <InvitationList invitations={members.data?.invitations ?? []} canManage={canManage} />
        </QueryState>
      </section>
    </div>
  );
}

function Invite({ canManage, myRole }: { canManage: boolean; myRole: ConsoleRole }) {
  const queryClient = useQueryClient();
  const [sent, setSent] = useState<{ url: string; email: string; emailed: boolean } | null>(null);
  const invite = useMutation({
    mutationFn: (body: { email: string; role: ConsoleRole }) => ok(consoleApi().call("inviteMember", { body })),
    onSuccess: (res) => {
      setSent({ url: res.acceptUrl, email: res.invitation.email, emailed: res.emailed });
      void queryClient.invalidateQueries({ queryKey: ["members"] });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const email = form.get("email");
    invite.mutate({ email: typeof email === "string" ? email.trim() : "", role: form.get("role") as ConsoleRole });
  };
  const fields = invite.error instanceof ApiProblem ? invite.error.fields : {};
  const roles = CONSOLE_ROLES.filter((r) => r !== "owner" || myRole === "owner");
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="invite">
      <h2 id="invite" className="mb-1 font-medium">Invite someone</h2>
      <p className="mb-4 text-sm text-slate-600">They get a link that works once and expires; you see it once, to send it yourself if no email goes out.</p>
      {!canManage ? <p className="mb-3 text-sm text-slate-600" data-testid="members-read-only">Your role can see the team but not change it.</p> : null}
      {sent ? (
        <div className="mb-4 space-y-2 rounded-md border border-amber-200 bg-amber-50/50 p-3" data-testid="invitation-link">
          <p className="text-sm">
            Invitation for <strong>{sent.email}</strong> created{sent.emailed ? " and emailed" : ""}. Send them this link; it is shown only now.
          </p>
          <CopySecret value={sent.url} label={`Invitation link for ${sent.email}`} />
          <button type="button" className={buttonClass} onClick={() => setSent(null)}>Done</button>
        </div>
      ) : null}
      <form onSubmit={submit} className="grid gap-4 md:grid-cols-[2fr_1fr_auto] md:items-end" aria-label="Invite someone">
        <div>
          <label htmlFor="invite-email" className="block text-sm font-medium">Email</label>
          <input id="invite-email" name="email" type="email" required disabled={!canManage} className={inputClass} />
          {fields.email ? <span className="mt-1 block text-xs text-red-700">{fields.email}</span> : null}
        </div>
        <div>
          <label htmlFor="invite-role" className="block text-sm font-medium">Role</label>
          <select id="invite-role" name="role" defaultValue="viewer" disabled={!canManage} className={inputClass}>
            {roles.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </div>
        <button type="submit" className={primaryButtonClass} disabled={!canManage || invite.isPending}>{invite.isPending ? "Inviting…" : "Invite"}</button>
      </form>
      <ul className="mt-3 grid gap-1 text-xs text-slate-600 sm:grid-cols-2">
        {roles.map((r) => <li key={r}><strong className="font-medium text-slate-800">{r}</strong>: {ROLE_HELP[r]}</li>)}
      </ul>
      {invite.error ? <p role="alert" className="mt-3 text-sm text-red-700">{invite.error.message}</p> : null}
    </section>
  );
}

function MemberList({ members, me, myRole, canManage }: { members: Member[]; me: string; myRole: ConsoleRole; canManage: boolean }) {
  const queryClient = useQueryClient();
  const router = useRouter();
  const done = () => void queryClient.invalidateQueries({ queryKey: ["members"] });
  const change = useMutation({
    mutationFn: ({ id, role }: { id: string; role: ConsoleRole }) => ok(consoleApi().call("updateMember", { params: { id }, body: { role } })),
    onSuccess: done,
    onError: done,
  });
  const remove = useMutation({
    mutationFn: (id: string) => ok(consoleApi().call("removeMember", { params: { id } })),
    onSuccess: (_res, id) => {
      if (id === me) {
        // Left the tenant: the console moves to another one, or to none.
        queryClient.clear();
        router.replace("/");
        router.refresh();
      } else done();
    },
  });
  const error = change.error ?? remove.error;
  return (
    <>
      {error ? <p role="alert" className="mb-3 text-sm text-red-700">{error.message}</p> : null}
      <ul className="divide-y divide-slate-100" data-testid="member-list">
        {members.map((m) => {
          const self = m.userId === me;
          const mayTouch = canManage && (m.role !== "owner" || myRole === "owner");
          return (
            <li key={m.userId} className="flex flex-col gap-2 py-3 sm:flex-row sm:items-center sm:justify-between" data-testid="member-row">
              <div className="min-w-0">
                <p className="break-words font-medium">{m.email}{self ? " (you)" : ""}</p>
                <p className="text-xs text-slate-600">{m.name ? `${m.name} · ` : ""}joined {formatTime(m.joinedAt)}</p>
              </div>
              <div className="flex flex-wrap items-center gap-2">
                <label className="text-xs text-slate-600">
                  <span className="sr-only">Role of {m.email}</span>
                  <select className="rounded-md border border-slate-300 bg-white px-2 py-1 text-sm text-slate-900" value={m.role}
                    disabled={!mayTouch || change.isPending}
                    onChange={(e) => change.mutate({ id: m.userId, role: e.target.value as ConsoleRole })}>
                    {CONSOLE_ROLES.filter((r) => r !== "owner" || myRole === "owner" || m.role === "owner").map((r) => <option key={r} value={r}>{r}</option>)}
                  </select>
                </label>
                {self ? (
                  <button type="button" className={buttonClass} disabled={remove.isPending}
                    onClick={() => { if (window.confirm("Leave this tenant? You lose access at once.")) remove.mutate(m.userId); }}>
                    Leave
                  </button>
                ) : (
                  <button type="button" className={buttonClass} disabled={!mayTouch || remove.isPending} aria-label={`Remove ${m.email}`}
                    onClick={() => { if (window.confirm(`Remove ${m.email} from this tenant?`)) remove.mutate(m.userId); }}>
                    Remove
                  </button>
                )}
              </div>
            </li>
          );
        })}
      </ul>
    </>
  );
}

const STATE_CLASS: Record<Invitation["state"], string> = {
  pending: "bg-indigo-100 text-indigo-800",
  accepted: "bg-emerald-100 text-emerald-800",
  revoked: "bg-slate-100 text-slate-700",
  expired: "bg-amber-100 text-amber-800",
};

function InvitationList({ invitations, canManage }: { invitations: Invitation[]; canManage: boolean }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: (id: string) => ok(consoleApi().call("revokeInvitation", { params: { id } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ["members"] }),
  });
  return (
    <ul className="divide-y divide-slate-100" data-testid="invitation-list">
      {invitations.map((i) => (
        <li key={i.id} className="flex flex-col gap-2 py-3 sm:flex-row sm:items-center sm:justify-between" data-testid="invitation-row">
          <div className="min-w-0">
            <p className="flex flex-wrap items-center gap-2">
              <span className="break-all font-medium">{i.email}</span>
              <span className="text-xs text-slate-600">as {i.role}</span>
              <span className={`rounded px-1.5 py-0.5 text-xs ${STATE_CLASS[i.state]}`}>{i.state}</span>
            </p>
            <p className="text-xs text-slate-600">
              by {i.invitedBy} · {formatTime(i.createdAt)} · {i.state === "accepted" ? `accepted ${formatTime(i.acceptedAt)}` : `expires ${formatTime(i.expiresAt)}`}
            </p>
          </div>
          {i.state === "pending" ? (
            <button type="button" className={buttonClass} disabled={!canManage || revoke.isPending} aria-label={`Revoke the invitation of ${i.email}`}
              onClick={() => revoke.mutate(i.id)}>
              Revoke
            </button>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
