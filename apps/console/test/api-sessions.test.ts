import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encode } from "next-auth/jwt";
import { waitFor } from "@tick/testing";
import { itConformsToOpenApi, startConsole, useConsole, type ConsoleHarness } from "./harness";

// Sign-in limits out of the way: the timing test makes many failed attempts, and a 429 would answer early.
const suite = useConsole({ TICK_AUTH_RATE_PER_ADDRESS: "100000", TICK_AUTH_RATE_PER_EMAIL: "100000" });

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
const SECRET = "test-secret-test-secret-test-secret-0123"; // the harness's NEXTAUTH_SECRET

/** Cookies kept across a conversation with next-auth (the harness's sign-in returns them as one header). */
function jar(cookie: string) {
  const map = new Map(cookie.split("; ").map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]));
  return {
    keep(res: Response) {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(";");
        map.set(pair!.slice(0, pair!.indexOf("=")), pair!.slice(pair!.indexOf("=") + 1));
      }
    },
    header: () => [...map].map(([k, v]) => `${k}=${v}`).join("; "),
  };
}

/** Sign-out over HTTP as next-auth's client does it: POST /api/auth/signout with the CSRF token. */
async function signOut(h: ConsoleHarness, cookie: string): Promise<void> {
  const cookies = jar(cookie);
  const csrf = await fetch(`${h.baseUrl}/api/auth/csrf`, { headers: { cookie: cookies.header() } });
  cookies.keep(csrf);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const res = await fetch(`${h.baseUrl}/api/auth/signout`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies.header() },
    body: new URLSearchParams({ csrfToken, callbackUrl: `${h.baseUrl}/login`, json: "true" }),
  });
  expect(res.status).toBeLessThan(400);
  // The browser's cookie is cleared…
  expect(res.headers.getSetCookie().some((c) => /session-token=;/.test(c))).toBe(true);
}

/** next-auth's own session endpoint, as the console's SessionProvider reads it. */
async function authSession(h: ConsoleHarness, cookie: string): Promise<{ user?: { email?: string }; expires?: string }> {
  const res = await fetch(`${h.baseUrl}/api/auth/session`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return (await res.json()) as { user?: { email?: string }; expires?: string };
}

const listJobsStatus = async (h: ConsoleHarness, cookie: string) => (await h.sessionClient(cookie).call("listJobs", {})).status;

/** The session id a cookie's token names (read from the one row the sign-in made). */
async function newestSessionOf(h: ConsoleHarness, userId: string) {
  return h.prisma.session.findFirstOrThrow({ where: { userId }, orderBy: { createdAt: "desc" } });
}

describe("signing out ends the session on the server", () => {
  it("after sign-out the old token is refused (401 on the API) and /api/auth/session has no user", async () => {
    const user = await suite.h.addUser(suite.a.id, "operator");
    const cookie = await suite.h.signIn(user.email, user.password);
    expect(await listJobsStatus(suite.h, cookie)).toBe(200);
    expect((await authSession(suite.h, cookie)).user?.email).toBe(user.email);
    const row = await newestSessionOf(suite.h, user.id);
    expect(row.revokedAt).toBeNull();

    await signOut(suite.h, cookie);

    // …and the token it held, replayed, no longer signs anyone in.
    const after = await suite.h.sessionClient(cookie).call("listJobs", {});
    expect(after.status).toBe(401);
    if (after.ok) throw new Error("expected a problem");
    expect(after.problem.type).toBe(problem("unauthorized"));
    expect((await authSession(suite.h, cookie)).user).toBeUndefined();
    const page = await fetch(`${suite.h.baseUrl}/jobs`, { headers: { cookie }, redirect: "manual" });
    expect(page.headers.get("location") ?? "").toMatch(/\/login/);
    expect(await suite.h.prisma.session.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({ revokedReason: "signed_out" });
  });

  it("refuses a token without a server-side session (issued before sessions were kept) and one whose row is gone", async () => {
    const user = await suite.h.addUser(suite.a.id, "viewer");
    // A valid, signed token of the kind issued before: the user's id and no session id.
    const legacy = await encode({ secret: SECRET, token: { sub: user.id, email: user.email, name: null }, maxAge: 3600 });
    const legacyCookie = `next-auth.session-token=${legacy}`;
    expect(await listJobsStatus(suite.h, legacyCookie)).toBe(401);
    expect((await authSession(suite.h, legacyCookie)).user).toBeUndefined();

    const cookie = await suite.h.signIn(user.email, user.password);
    expect(await listJobsStatus(suite.h, cookie)).toBe(200);
    await suite.h.prisma.session.deleteMany({ where: { userId: user.id } });
    expect(await listJobsStatus(suite.h, cookie)).toBe(401);
    expect((await authSession(suite.h, cookie)).user).toBeUndefined();
  });

  it("records a session's activity at most once a minute", async () => {
    const user = await suite.h.addUser(suite.a.id, "viewer");
    const cookie = await suite.h.signIn(user.email, user.password);
    const row = await newestSessionOf(suite.h, user.id);
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(8 * 3_600_000); // TICK_SESSION_MAX_AGE's default
    for (let i = 0; i < 5; i++) expect(await listJobsStatus(suite.h, cookie)).toBe(200);
    expect((await suite.h.prisma.session.findUniqueOrThrow({ where: { id: row.id } })).lastSeenAt).toEqual(row.lastSeenAt);
    // A minute later (moved back rather than waited for), the next request records itself.
    const aMinuteAgo = new Date(Date.now() - 61_000);
    await suite.h.prisma.session.update({ where: { id: row.id }, data: { lastSeenAt: aMinuteAgo } });
    const before = Date.now();
    expect(await listJobsStatus(suite.h, cookie)).toBe(200);
    await waitFor(async () => (await suite.h.prisma.session.findUniqueOrThrow({ where: { id: row.id } })).lastSeenAt.getTime() >= before - 1_000, {
      timeoutMs: 5_000,
      description: "last_seen_at written by the request",
    });
  });
});

describe("the account API: sessions and password", () => {
  it("lists the person's active sessions, the current one marked; ends one of them; another person's is 404", async () => {
    const user = await suite.h.addUser(suite.a.id, "viewer");
    const first = await suite.h.signIn(user.email, user.password);
    const second = await suite.h.signIn(user.email, user.password);
    const third = await suite.h.signIn(user.email, user.password);
    const stranger = await suite.h.addUser(suite.a.id, "viewer");
    await suite.h.signIn(stranger.email, stranger.password);
    const strangerSession = await newestSessionOf(suite.h, stranger.id);

    const list = await suite.h.sessionClient(first).call("listAccountSessions", {});
    if (!list.ok) throw new Error(`list failed: ${list.status}`);
    expect(list.body.data).toHaveLength(3);
    expect(list.body.data.filter((s) => s.current)).toHaveLength(1);
    expect(list.body.data.every((s) => s.userAgent !== null)).toBe(true);
    const current = list.body.data.find((s) => s.current)!;
    const fromSecond = await suite.h.sessionClient(second).call("listAccountSessions", {});
    const secondId = fromSecond.ok ? fromSecond.body.data.find((s) => s.current)!.id : "";
    expect(secondId).not.toBe(current.id);

    const ended = await suite.h.sessionClient(first).call("revokeAccountSession", { params: { id: secondId } });
    expect(ended.ok && ended.body).toEqual({ ended: 1 });
    expect(await listJobsStatus(suite.h, second)).toBe(401);
    expect(await listJobsStatus(suite.h, first)).toBe(200);
    expect(await listJobsStatus(suite.h, third)).toBe(200);
    const again = await suite.h.sessionClient(first).call("revokeAccountSession", { params: { id: secondId } });
    expect(again.ok && again.body).toEqual({ ended: 0 });
    // Someone else's session is no business of this person's.
    expect((await suite.h.sessionClient(first).call("revokeAccountSession", { params: { id: strangerSession.id } })).status).toBe(404);
    expect((await suite.h.prisma.session.findUniqueOrThrow({ where: { id: strangerSession.id } })).revokedAt).toBeNull();
    const after = await suite.h.sessionClient(first).call("listAccountSessions", {});
    expect(after.ok && after.body.data.map((s) => s.id).sort()).toHaveLength(2);
  });

  it("sign out everywhere ends every session of the person, the current one included, and no one else's", async () => {
    const user = await suite.h.addUser(suite.a.id, "operator");
    const here = await suite.h.signIn(user.email, user.password);
    const elsewhere = await suite.h.signIn(user.email, user.password);
    const other = await suite.h.addUser(suite.a.id, "operator");
    const otherCookie = await suite.h.signIn(other.email, other.password);

    const res = await suite.h.sessionClient(here).call("revokeAccountSessions", {});
    expect(res.ok && res.body).toEqual({ ended: 2 });
    expect(await listJobsStatus(suite.h, here)).toBe(401);
    expect(await listJobsStatus(suite.h, elsewhere)).toBe(401);
    expect((await authSession(suite.h, elsewhere)).user).toBeUndefined();
    expect(await listJobsStatus(suite.h, otherCookie)).toBe(200);
    expect(await suite.h.prisma.session.count({ where: { userId: user.id, revokedReason: "signed_out_everywhere" } })).toBe(2);
    // Signing in again works, with a new session.
    expect(await listJobsStatus(suite.h, await suite.h.signIn(user.email, user.password))).toBe(200);
  });

  it("a password change needs the current password, ends the person's other sessions, and only the new password signs in", async () => {
    const user = await suite.h.addUser(suite.a.id, "viewer");
    const here = await suite.h.signIn(user.email, user.password);
    const elsewhere = await suite.h.signIn(user.email, user.password);
    const client = suite.h.sessionClient(here);
    const newPassword = `new passphrase ${crypto.randomUUID()}`;

    const wrong = await client.call("changePassword", { body: { currentPassword: "not the password at all", newPassword } });
    expect(wrong.status).toBe(422);
    if (wrong.ok) throw new Error("expected a problem");
    expect((wrong.problem as { errors?: { path: string }[] }).errors?.map((e) => e.path)).toEqual(["currentPassword"]);
    const short = await client.call("changePassword", { body: { currentPassword: user.password, newPassword: "short" } });
    expect(short.status).toBe(422);
    if (short.ok) throw new Error("expected a problem");
    expect((short.problem as { errors?: { path: string }[] }).errors?.map((e) => e.path)).toEqual(["newPassword"]);
    // The server's password policy holds for a change as for a sign-up: no common password.
    const common = await client.call("changePassword", { body: { currentPassword: user.password, newPassword: "password1234" } });
    expect(common.status).toBe(422);
    if (common.ok) throw new Error("expected a problem");
    expect((common.problem as { errors?: { path: string }[] }).errors?.map((e) => e.path)).toEqual(["newPassword"]);
    expect(await listJobsStatus(suite.h, elsewhere)).toBe(200); // nothing changed yet

    const changed = await client.call("changePassword", { body: { currentPassword: user.password, newPassword } });
    expect(changed.ok && changed.body).toEqual({ endedSessions: 1 });
    expect(await listJobsStatus(suite.h, elsewhere)).toBe(401);
    expect(await listJobsStatus(suite.h, here)).toBe(200);
    await expect(suite.h.signIn(user.email, user.password)).rejects.toThrow(/sign-in failed/);
    expect(await listJobsStatus(suite.h, await suite.h.signIn(user.email, newPassword))).toBe(200);
  });

  it("takes the person's own console session from the console's origin: never an API key, never another site", async () => {
    const user = await suite.h.addUser(suite.a.id, "owner");
    const cookie = await suite.h.signIn(user.email, user.password);
    const asKey = await suite.h.client(suite.a.apiKey).call("listAccountSessions", {});
    expect(asKey.status).toBe(403);
    expect((await suite.h.client(suite.a.apiKey).call("revokeAccountSessions", {})).status).toBe(403);
    expect((await suite.h.client("").call("listAccountSessions", {})).status).toBe(401);
    const crossSite = await fetch(`${suite.h.baseUrl}/api/v1/account/sessions/revoke`, { method: "POST", headers: { cookie, origin: "https://evil.example" } });
    expect(crossSite.status).toBe(403);
    const noOrigin = await fetch(`${suite.h.baseUrl}/api/v1/account/password`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ currentPassword: user.password, newPassword: `x${user.password}` }),
    });
    expect(noOrigin.status).toBe(403);
    expect(await listJobsStatus(suite.h, cookie)).toBe(200);
    expect(await suite.h.prisma.session.count({ where: { userId: user.id, revokedAt: { not: null } } })).toBe(0);
  });
});

describe("what a session may do in a tenant is read on every request", () => {
  it("removal from the tenant takes effect on the member's next request", async () => {
    const member = await suite.h.addUser(suite.a.id, "operator");
    const cookie = await suite.h.signIn(member.email, member.password);
    const session = suite.h.sessionClient(cookie, { "tick-tenant": suite.a.id });
    expect((await session.call("listJobs", {})).status).toBe(200);
    expect((await suite.h.client(suite.a.apiKey).call("removeMember", { params: { id: member.id } })).status).toBe(200);
    const after = await session.call("listJobs", {});
    expect(after.status).toBe(403);
    // Still signed in (their account remains), but with no tenant.
    expect((await session.call("listAccountSessions", {})).status).toBe(200);
  });

  it("a platform operator's suspension of the tenant takes effect on its members' next request, and its resumption too", async () => {
    const tenant = await suite.h.createTenant();
    const member = await suite.h.addUser(tenant.id, "admin");
    const session = suite.h.sessionClient(await suite.h.signIn(member.email, member.password));
    expect((await session.call("listJobs", {})).status).toBe(200);
    const operator = await suite.h.addUser(suite.a.id, "viewer");
    await suite.h.prisma.user.update({ where: { id: operator.id }, data: { platformOperator: true } });
    const ops = suite.h.sessionClient(await suite.h.signIn(operator.email, operator.password));
    expect((await ops.call("operatorSuspendTenant", { params: { id: tenant.id }, body: { reason: "session test" } })).status).toBe(200);
    const suspended = await session.call("listJobs", {});
    expect(suspended.status).toBe(403);
    if (suspended.ok) throw new Error("expected a problem");
    expect(suspended.problem.type).toBe(problem("tenant_suspended"));
    expect((await ops.call("operatorResumeTenant", { params: { id: tenant.id } })).status).toBe(200);
    expect((await session.call("listJobs", {})).status).toBe(200);
  });
});

describe("sign-in spends the same work whether or not the email has an account", () => {
  /** One password sign-in attempt, timed from the request to the answer (the CSRF round trip is not timed). */
  async function timedAttempt(email: string, password: string): Promise<number> {
    const csrf = await fetch(`${suite.h.baseUrl}/api/auth/csrf`);
    const cookies = jar("");
    cookies.keep(csrf);
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const started = performance.now();
    const res = await fetch(`${suite.h.baseUrl}/api/auth/callback/credentials`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookies.header() },
      body: new URLSearchParams({ csrfToken, email, password, json: "true" }),
    });
    const body = await res.text();
    const ms = performance.now() - started;
    // Refused as a wrong password, never as a rate limit (which answers before any password work).
    expect(res.status).not.toBe(429);
    expect(body).toMatch(/CredentialsSignin/);
    return ms;
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };

  it("a wrong password for an existing account and any password for an unknown email take the same time", { timeout: 120_000 }, async () => {
    const user = await suite.h.addUser(suite.a.id, "viewer");
    const noPassword = await suite.h.addUser(suite.a.id, "viewer");
    await suite.h.prisma.user.update({ where: { id: noPassword.id }, data: { passwordHash: null } });
    const existing = () => timedAttempt(user.email, "wrong password, quite long");
    const unknown = () => timedAttempt(`nobody-${crypto.randomUUID()}@example.test`, "wrong password, quite long");
    const noPasswordAccount = () => timedAttempt(noPassword.email, "anything at all here");
    for (let i = 0; i < 3; i++) await Promise.all([existing(), unknown(), noPasswordAccount()]); // warm up every path
    // Two measurements of each case (and one of an account without a password), interleaved so that drift in
    // the machine's load hits them all alike.
    const runs = { existing1: [] as number[], unknown1: [] as number[], existing2: [] as number[], unknown2: [] as number[], noPassword: [] as number[] };
    const attempt = { existing1: existing, unknown1: unknown, existing2: existing, unknown2: unknown, noPassword: noPasswordAccount };
    const names = Object.keys(runs) as (keyof typeof runs)[];
    for (let i = 0; i < 10; i++) {
      for (const run of i % 2 ? [...names].reverse() : names) runs[run].push(await attempt[run]());
    }
    const noise = Math.max(Math.abs(median(runs.existing1) - median(runs.existing2)), Math.abs(median(runs.unknown1) - median(runs.unknown2)));
    const existingMs = median([...runs.existing1, ...runs.existing2]);
    const unknownMs = median([...runs.unknown1, ...runs.unknown2]);
    const noPasswordMs = median(runs.noPassword);
    console.log(
      `sign-in timing: existing ${existingMs.toFixed(1)} ms, unknown ${unknownMs.toFixed(1)} ms, no password ${noPasswordMs.toFixed(1)} ms, ` +
        `noise ${noise.toFixed(1)} ms (medians of 20, 20, 10)`,
    );
    const allowed = Math.max(15, 3 * noise);
    expect(Math.abs(existingMs - unknownMs)).toBeLessThan(allowed);
    expect(Math.abs(existingMs - noPasswordMs)).toBeLessThan(allowed);
  });
});

describe("idle and absolute lifetimes (TICK_SESSION_IDLE_TIMEOUT=2s, TICK_SESSION_MAX_AGE=6s)", () => {
  let h: ConsoleHarness;
  let tenantId: string;
  beforeAll(async () => {
    h = await startConsole({ TICK_SESSION_IDLE_TIMEOUT: "2s", TICK_SESSION_MAX_AGE: "6s" });
    tenantId = (await h.createTenant()).id;
  }, 90_000);
  afterAll(async () => h?.stop());

  /** Calls the API every `everyMs` until it refuses the session or `forMs` passed; the answers with their times since `since`. */
  async function keepUsing(cookie: string, since: number, forMs: number, everyMs = 250) {
    const answers: { atMs: number; status: number }[] = [];
    while (performance.now() - since < forMs) {
      const status = await listJobsStatus(h, cookie);
      answers.push({ atMs: performance.now() - since, status });
      if (status !== 200) break;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return answers;
  }

  it("a session in use outlives the idle timeout; once idle longer than it, it is refused", { timeout: 30_000 }, async () => {
    const user = await h.addUser(tenantId, "viewer");
    const cookie = await h.signIn(user.email, user.password);
    const since = performance.now();
    const used = await keepUsing(cookie, since, 3_000);
    expect(used.every((a) => a.status === 200)).toBe(true);
    expect(used.at(-1)!.atMs).toBeGreaterThan(2_500); // longer than the idle timeout, in use all along
    // Then no request for longer than the idle timeout: time itself is what this waits for.
    await new Promise((r) => setTimeout(r, 2_300));
    expect(await listJobsStatus(h, cookie)).toBe(401);
    expect((await authSession(h, cookie)).user).toBeUndefined();
  });

  it("the absolute lifetime ends even a session in use, and the cookie's lifetime follows it", { timeout: 30_000 }, async () => {
    const user = await h.addUser(tenantId, "viewer");
    const signedInAt = performance.now();
    const cookie = await h.signIn(user.email, user.password);
    const row = await newestSessionOf(h, user.id);
    expect(row.expiresAt.getTime() - row.createdAt.getTime()).toBe(6_000);
    const expires = (await authSession(h, cookie)).expires;
    expect(Date.parse(expires ?? "") - Date.now()).toBeLessThanOrEqual(6_000);
    const answers = await keepUsing(cookie, signedInAt, 12_000);
    const refused = answers.at(-1)!;
    expect(refused.status).toBe(401);
    expect(answers.slice(0, -1).every((a) => a.status === 200)).toBe(true);
    // Refused once its 6 s were up (the JWT itself would be accepted 15 s past its expiry: the row decides).
    expect(refused.atMs).toBeGreaterThan(5_500);
    expect(refused.atMs).toBeLessThan(8_000);
  });
});

itConformsToOpenApi(suite, 20);
