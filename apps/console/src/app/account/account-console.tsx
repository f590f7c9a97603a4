"use client";

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { signOut } from "next-auth/react";
import { useState, type FormEvent } from "react";
import type { AccountSession } from "@tick/contract";
import { FormError, placeErrors, TextField } from "@/components/form-fields";
import { buttonClass, consoleApi, formatTime, ok, primaryButtonClass, QueryState } from "@/components/ui";

const SESSIONS = ["account-sessions"];

/** "Chrome on Linux" from a User-Agent, for people; the whole string is shown beside it. */
function describeAgent(ua: string | null): string {
  if (!ua) return "Unknown browser";
  const browser = /Edg\//.test(ua)
    ? "Edge"
    : /Firefox\//.test(ua)
      ? "Firefox"
      : /Chrom(e|ium)\//.test(ua)
        ? "Chrome"
        : /Safari\//.test(ua)
          ? "Safari"
          : /^(node|undici|curl|python)/i.test(ua)
            ? "A program"
            : "A browser";
  const os = /Android/.test(ua) ? "Android" : /iPhone|iPad/.test(ua) ? "iOS" : /Windows/.test(ua) ? "Windows" : /Mac OS X/.test(ua) ? "macOS" : /Linux/.test(ua) ? "Linux" : null;
  return os ? `${browser} on ${os}` : browser;
}

/** The signed-in person's sessions (where they are signed in) and their password. */
export function AccountConsole({ email }: { email: string }) {
  return (
    <div className="space-y-6">
      <Sessions />
      <ChangePassword email={email} />
    </div>
  );
}

function Sessions() {
  const queryClient = useQueryClient();
  const sessions = useQuery({ queryKey: SESSIONS, queryFn: () => ok(consoleApi().call("listAccountSessions", {})) });
  const endOne = useMutation({
    mutationFn: (id: string) => ok(consoleApi().call("revokeAccountSession", { params: { id } })),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: SESSIONS }),
  });
  const everywhere = useMutation({
    mutationFn: () => ok(consoleApi().call("revokeAccountSessions", {})),
    // This session ended too: clear its cookie and go to the sign-in page.
    onSuccess: () => signOut({ callbackUrl: "/login" }),
  });
  const rows = sessions.data?.data ?? [];
  const error = endOne.error ?? everywhere.error;
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="sessions">
      <div className="mb-4 flex flex-col gap-3 sm:flex-row sm:items-start sm:justify-between">
        <div className="min-w-0">
          <h2 id="sessions" className="mb-1 font-medium">Where you are signed in</h2>
          <p className="text-sm text-slate-600">
            Each sign-in lasts until it signs out, makes no request for a while, or reaches its maximum age. Signing out elsewhere takes effect on that
            browser&apos;s next request.
          </p>
        </div>
        <button type="button" className={`${buttonClass} shrink-0`} disabled={everywhere.isPending || everywhere.isSuccess}
          onClick={() => {
            if (window.confirm("Sign out of every browser, this one included?")) everywhere.mutate();
          }}>
          {everywhere.isPending || everywhere.isSuccess ? "Signing out…" : "Sign out everywhere"}
        </button>
      </div>
      {error ? <p role="alert" className="mb-3 text-sm text-red-700">{error.message}</p> : null}
      <QueryState isPending={sessions.isPending} error={sessions.error} isEmpty={rows.length === 0} empty="No active sessions." retry={() => void sessions.refetch()}>
        <ul className="divide-y divide-slate-100" data-testid="session-list">
          {rows.map((s) => (
            <SessionRow key={s.id} session={s} ending={endOne.isPending && endOne.variables === s.id} onEnd={() => endOne.mutate(s.id)} />
          ))}
        </ul>
      </QueryState>
    </section>
  );
}

function SessionRow({ session: s, ending, onEnd }: { session: AccountSession; ending: boolean; onEnd: () => void }) {
  const endsAt = Date.parse(s.idleExpiresAt) < Date.parse(s.expiresAt) ? s.idleExpiresAt : s.expiresAt;
  return (
    <li className="flex flex-col gap-2 py-3 sm:flex-row sm:items-center sm:justify-between" data-testid="session-row" data-current={s.current || undefined}>
      <div className="min-w-0">
        <p className="flex flex-wrap items-center gap-2">
          <span className="font-medium">{describeAgent(s.userAgent)}</span>
          {s.current ? <span className="rounded bg-emerald-100 px-1.5 py-0.5 text-xs text-emerald-900" data-testid="current-session">This browser</span> : null}
        </p>
        <p className="text-xs text-slate-600">
          Signed in {formatTime(s.createdAt)} · last active {formatTime(s.lastSeenAt)} · ends by {formatTime(endsAt)} if not used
        </p>
        {s.userAgent ? <p className="break-all text-xs text-slate-500">{s.userAgent}</p> : null}
      </div>
      {s.current ? null : (
        <button type="button" className={`${buttonClass} self-start sm:self-auto`} disabled={ending} onClick={onEnd}
          aria-label={`Sign out the session of ${describeAgent(s.userAgent)} signed in ${formatTime(s.createdAt)}`}>
          {ending ? "Signing out…" : "Sign out"}
        </button>
      )}
    </li>
  );
}

const PLACED = new Set(["currentPassword", "newPassword", "confirmPassword"]);

function ChangePassword({ email }: { email: string }) {
  const queryClient = useQueryClient();
  const [currentPassword, setCurrentPassword] = useState("");
  const [newPassword, setNewPassword] = useState("");
  const [confirmPassword, setConfirmPassword] = useState("");
  const [local, setLocal] = useState<Record<string, string>>({});
  const [done, setDone] = useState<number | null>(null);
  const change = useMutation({
    mutationFn: (body: { currentPassword: string; newPassword: string }) => ok(consoleApi().call("changePassword", { body })),
    onSuccess: (res) => {
      setDone(res.endedSessions);
      setCurrentPassword("");
      setNewPassword("");
      setConfirmPassword("");
      void queryClient.invalidateQueries({ queryKey: SESSIONS });
    },
  });
  const { errors, unplaced } = placeErrors(change.error, PLACED, (path) => path.split(".")[0]!, local);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    setDone(null);
    if (newPassword !== confirmPassword) {
      setLocal({ confirmPassword: "does not match the new password" });
      return;
    }
    setLocal({});
    change.mutate({ currentPassword, newPassword });
  };
  return (
    <section className="rounded-xl border border-slate-200 bg-white p-5" aria-labelledby="password">
      <h2 id="password" className="mb-1 font-medium">Change your password</h2>
      <p className="mb-4 text-sm text-slate-600">Every other browser signed in as you is signed out; this one stays signed in.</p>
      <form onSubmit={submit} className="grid gap-4 md:grid-cols-3" aria-label="Change your password" noValidate>
        {/* For password managers: whose password this is. */}
        <input type="text" name="username" autoComplete="username" value={email} readOnly hidden />
        <TextField name="currentPassword" label="Current password" type="password" autoComplete="current-password" required
          value={currentPassword} onChange={setCurrentPassword} error={errors.currentPassword} />
        <TextField name="newPassword" label="New password" type="password" autoComplete="new-password" required
          value={newPassword} onChange={setNewPassword} error={errors.newPassword} hint="At least 12 characters, and not a common password: a few unrelated words make a good one." />
        <TextField name="confirmPassword" label="New password again" type="password" autoComplete="new-password" required
          value={confirmPassword} onChange={setConfirmPassword} error={errors.confirmPassword} />
        <div className="space-y-3 md:col-span-3">
          <FormError error={change.error} unplaced={unplaced} what="The new password" />
          {done !== null ? (
            <p role="status" className="text-sm text-emerald-800" data-testid="password-changed">
              Password changed. {done === 0 ? "You were signed in nowhere else." : `${done} other ${done === 1 ? "session was" : "sessions were"} signed out.`}
            </p>
          ) : null}
          <button type="submit" className={primaryButtonClass} disabled={change.isPending || !currentPassword || !newPassword}>
            {change.isPending ? "Changing…" : "Change password"}
          </button>
        </div>
      </form>
    </section>
  );
}
