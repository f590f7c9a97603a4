import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hashPassword, verifyPassword } from "@tick/db";
import { waitFor } from "@tick/testing";
import { itConformsToOpenApi, useConsole } from "./harness";

// Every mail the console sends is a JSON file in this directory (TICK_MAIL_DIR), read back by the tests.
const mailDir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-signup-mail-"));
// Small limits so the tests can reach them; each test uses its own client address (X-Forwarded-For, read
// through one trusted proxy hop) so their counts do not mix. LOG_LEVEL info: the operators' log line.
const suite = useConsole({
  TICK_SIGNUP: "open",
  TICK_MAIL_DIR: mailDir,
  TICK_SIGNUP_TTL: "2h",
  TICK_TRUSTED_PROXIES: "1",
  TICK_AUTH_RATE_PER_ADDRESS: "6",
  TICK_AUTH_RATE_PER_EMAIL: "3",
  TICK_AUTH_RATE_WINDOW: "10m",
  LOG_LEVEL: "info",
});
afterAll(() => fs.rmSync(mailDir, { recursive: true, force: true }));

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
let n = 0;
const unique = () => `${Date.now().toString(36)}-${++n}`;
const password = "correct horse battery staple";
const from = (address: string) => ({ "x-forwarded-for": address });
const publicClient = () => suite.h.client("");
const nextAddress = () => `10.${Math.floor(++n / 250) % 250}.${n % 250}.${(n * 7) % 250}`;
const signUp = (body: Record<string, unknown>, address = nextAddress()) => publicClient().call("signUp", { body, headers: from(address) });
const verify = (token: string, address = nextAddress()) => publicClient().call("verifySignup", { body: { token }, headers: from(address) });

interface Mail {
  from: string;
  to: string;
  subject: string;
  text: string;
  date: string;
}

function mailsTo(to: string): Mail[] {
  return fs
    .readdirSync(mailDir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(mailDir, f), "utf8")) as Mail)
    .filter((m) => m.to === to);
}

/** The `count`th mail to `to`, waiting for it: mails go out just after the answer, not before it. */
const mailNumber = (to: string, count = 1) =>
  waitFor(() => mailsTo(to)[count - 1], { timeoutMs: 10_000, description: `mail #${count} to ${to}` });

const tokenIn = (mail: Mail) => {
  const match = /\/signup\/verify#token=([\w-]+)/.exec(mail.text);
  if (!match) throw new Error(`no link in ${mail.text}`);
  return match[1]!;
};

/** Sign-up, the mail, and the confirmation: the tenant as it is made. */
async function signUpAndConfirm(body: Record<string, unknown>, mailCount = 1) {
  const requested = await signUp(body);
  expect(requested.status).toBe(202);
  const confirmed = await verify(tokenIn(await mailNumber(String(body.email), mailCount)));
  if (!confirmed.ok) throw new Error(`confirmation failed: ${confirmed.status} ${JSON.stringify(confirmed.problem)}`);
  return confirmed.body;
}

/** The same structure with every leaf replaced by its type: what two answers must share. */
const shape = (v: unknown): unknown =>
  v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])) : typeof v;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One password sign-in through next-auth's credentials endpoint: its status (429 when limited). */
async function signInStatus(email: string, pw: string, address: string): Promise<number> {
  const csrf = await fetch(`${suite.h.baseUrl}/api/auth/csrf`);
  const cookie = csrf.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const res = await fetch(`${suite.h.baseUrl}/api/auth/callback/credentials`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie, ...from(address) },
    body: new URLSearchParams({ csrfToken, email, password: pw, json: "true" }),
  });
  if (res.status === 429) {
    const body = (await res.json()) as { type: string; url: string };
    expect(body.type).toBe(problem("rate_limited"));
    expect(body.url).toMatch(/error=RateLimited/); // what next-auth's client reads
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  }
  return res.status;
}

describe("sign-up", () => {
  it("mails a confirmation link and creates nothing until it is confirmed; then the tenant, its owner, a default queue and a first owner key, all audited", async () => {
    const email = `owner-${unique()}@example.test`;
    const before = { users: await suite.h.prisma.user.count(), tenants: await suite.h.prisma.tenant.count() };
    const asked = Date.now();
    const res = await signUp({ tenantName: "Acme Payments, Inc.", email: ` ${email.toUpperCase()} `, password, name: "Ada" });
    expect(res.status).toBe(202);
    if (!res.ok) throw new Error("expected success");
    expect(res.body).toEqual({ status: "verification_sent", email, expiresAt: expect.any(String) as string });
    // TICK_SIGNUP_TTL (2h here).
    expect(Math.abs(Date.parse(res.body.expiresAt) - (asked + 2 * 3_600_000))).toBeLessThan(60_000);
    expect({ users: await suite.h.prisma.user.count(), tenants: await suite.h.prisma.tenant.count() }).toEqual(before);

    const mail = await mailNumber(email);
    expect(mail.subject).toBe("Confirm your email to create Acme Payments, Inc. on Tick");
    expect(mail.text).toContain(`${suite.h.baseUrl}/signup/verify#token=`);
    const token = tokenIn(mail);
    expect(token.length).toBeGreaterThanOrEqual(40);
    // Stored: the SHA-256 of the token (never the token) and the scrypt hash of the password.
    const request = await suite.h.prisma.signupRequest.findFirstOrThrow({ where: { email } });
    expect(request.tokenHash).not.toContain(token);
    expect(request.passwordHash).toMatch(/^scrypt\$/);
    expect(await verifyPassword(password, request.passwordHash)).toBe(true);
    expect([request.slug, request.tenantName, request.name, request.completedAt]).toEqual(["acme-payments-inc", "Acme Payments, Inc.", "Ada", null]);

    const confirmed = await verify(token);
    expect(confirmed.status).toBe(201);
    if (!confirmed.ok) throw new Error("expected success");
    const { tenant, user, firstKey } = confirmed.body;
    expect(tenant.slug).toBe("acme-payments-inc");
    expect(user.email).toBe(email);
    expect(firstKey.key).toMatch(/^tk_/);
    expect(firstKey.apiKey.scopes).toEqual(["admin"]);
    expect(firstKey.apiKey.role).toBe("owner");
    expect((await suite.h.prisma.signupRequest.findUniqueOrThrow({ where: { id: request.id } })).completedAt).not.toBeNull();

    // The key is the tenant's: it lists the default queue and nothing of tenant `a`.
    const queues = await suite.h.client(firstKey.key).call("listQueues", {});
    expect(queues.ok && queues.body.data.map((q) => q.name)).toEqual(["default"]);
    const stored = await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: firstKey.apiKey.id } });
    // Stored hashed, never the secret: everything after the "tk_<prefix>_" (the secret is base64url, so it
    // may itself hold or start with "_"; a split on "_" once made this check compare with "" and fail).
    const secret = firstKey.key.slice(firstKey.key.indexOf("_", 3) + 1);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(stored.hash).not.toContain(secret);
    expect(stored.role).toBe("owner");
    const owner = await suite.h.prisma.user.findUniqueOrThrow({ where: { id: user.id }, include: { memberships: true } });
    expect(owner.passwordHash).toBe(request.passwordHash);
    expect(owner.name).toBe("Ada");
    expect(owner.currentTenantId).toBe(tenant.id);
    expect(owner.memberships.map((m) => [m.tenantId, m.role])).toEqual([[tenant.id, "owner"]]);
    const audit = await suite.h.prisma.auditLog.findMany({ where: { tenantId: tenant.id }, orderBy: { id: "asc" } });
    expect(audit.map((a) => [a.action, a.actorType, a.actorId])).toEqual([
      ["tenant.created", "user", user.id],
      ["member.added", "user", user.id],
      ["api_key.created", "user", user.id],
    ]);

    // The owner signs in to the console with the password given at sign-up and acts on the new tenant as its owner.
    const cookie = await suite.h.signIn(email, password);
    const viaSession = await suite.h.sessionClient(cookie, { "tick-tenant": tenant.id }).call("listApiKeys", {});
    expect(viaSession.ok && viaSession.body.data.map((k) => k.id)).toEqual([firstKey.apiKey.id]);
  });

  it("a link works once: two confirmations at the same instant make one tenant, the other is 404, as is any later one", async () => {
    const email = `once-${unique()}@example.test`;
    const slug = `once-${unique()}`;
    expect((await signUp({ tenantName: "Once", slug, email, password })).status).toBe(202);
    const token = tokenIn(await mailNumber(email));
    const results = await Promise.all([verify(token), verify(token)]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 404]);
    const again = await verify(token);
    expect(again.status).toBe(404);
    if (again.ok) throw new Error("expected a problem");
    expect(again.problem.type).toBe(problem("not_found"));
    expect(await suite.h.prisma.tenant.count({ where: { slug } })).toBe(1);
    const user = await suite.h.prisma.user.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(user.memberships).toHaveLength(1);
    expect(await suite.h.prisma.apiKey.count({ where: { tenantId: user.memberships[0]!.tenantId } })).toBe(1);
  });

  it("an expired link is the same 404 as an unknown one, and creates nothing", async () => {
    const email = `late-${unique()}@example.test`;
    expect((await signUp({ tenantName: "Late", email, password })).status).toBe(202);
    const token = tokenIn(await mailNumber(email));
    await suite.h.prisma.signupRequest.updateMany({ where: { email }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const expired = await verify(token);
    const unknown = await verify("x".repeat(43));
    expect([expired.status, unknown.status]).toEqual([404, 404]);
    if (expired.ok || unknown.ok) throw new Error("expected problems");
    expect(expired.problem).toEqual({ ...unknown.problem, instance: expired.problem.instance });
    expect(await suite.h.prisma.user.findUnique({ where: { email } })).toBeNull();
  });

  it("a tenant ID taken between the request and its confirmation is 409 naming it; the link is not used up", async () => {
    const slug = `race-${unique()}`;
    const first = `first-${unique()}@example.test`;
    const second = `second-${unique()}@example.test`;
    expect((await signUp({ tenantName: "First", slug, email: first, password })).status).toBe(202);
    expect((await signUp({ tenantName: "Second", slug, email: second, password })).status).toBe(202);
    const secondToken = tokenIn(await mailNumber(second));
    expect((await verify(tokenIn(await mailNumber(first)))).status).toBe(201);
    const lost = await verify(secondToken);
    expect(lost.status).toBe(409);
    if (lost.ok) throw new Error("expected a problem");
    expect(lost.problem.type).toBe(problem("conflict"));
    expect(lost.problem.detail).toContain(slug);
    expect(await suite.h.prisma.user.findUnique({ where: { email: second } })).toBeNull();
    expect((await suite.h.prisma.signupRequest.findFirstOrThrow({ where: { email: second } })).completedAt).toBeNull();
    expect(await suite.h.prisma.tenant.count({ where: { slug } })).toBe(1);
  });

  it("a tenant ID already taken is 409 about the slug, the same for a new email and an existing account's; nothing is stored or mailed", async () => {
    const slug = `taken-${unique()}`;
    await signUpAndConfirm({ tenantName: "Holder", slug, email: `holder-${unique()}@example.test`, password });
    const member = await suite.h.addUser(suite.a.id, "viewer");
    const fresh = `fresh-${unique()}@example.test`;
    const answers = [];
    for (const email of [fresh, member.email]) {
      const res = await signUp({ tenantName: "Second", slug, email, password });
      expect(res.status).toBe(409);
      if (res.ok) throw new Error("expected a problem");
      answers.push({ ...res.problem, instance: null });
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]!.type).toBe(problem("conflict"));
    expect(answers[0]!.detail).toContain(slug);
    expect(answers[0]!.errors).toEqual([{ path: "slug", message: "taken" }]);
    expect(await suite.h.prisma.signupRequest.count({ where: { email: { in: [fresh, member.email] } } })).toBe(0);
    expect([...mailsTo(fresh), ...mailsTo(member.email)]).toEqual([]);
  });

  it("an existing account's email gets the same answer; its owner is told, and confirming adds the tenant to the account, which keeps its password", async () => {
    const member = await suite.h.addUser(suite.a.id, "viewer");
    const before = await suite.h.prisma.user.findUniqueOrThrow({ where: { id: member.id } });
    const res = await signUp({ tenantName: "Second Home", email: member.email, password: "another long passphrase here", name: "Someone Else" });
    expect(res.status).toBe(202);
    if (!res.ok) throw new Error("expected success");
    expect(res.body.email).toBe(member.email);
    const mail = await mailNumber(member.email);
    expect(mail.subject).toBe("Add the tenant Second Home to your Tick account?");
    expect(mail.text).toContain("already has a Tick account");
    expect(mail.text).toContain("If it was not you, ignore this email");
    // Until it is confirmed, the account is exactly as it was.
    expect(await suite.h.prisma.membership.count({ where: { userId: member.id } })).toBe(1);

    const confirmed = await verify(tokenIn(mail));
    expect(confirmed.status).toBe(201);
    if (!confirmed.ok) throw new Error("expected success");
    expect(confirmed.body.user.id).toBe(member.id);
    const after = await suite.h.prisma.user.findUniqueOrThrow({ where: { id: member.id }, include: { memberships: true } });
    expect(after.passwordHash).toBe(before.passwordHash);
    expect(after.name).toBe(before.name);
    expect(after.memberships.map((m) => [m.tenantId, m.role]).sort()).toEqual(
      [[suite.a.id, "viewer"], [confirmed.body.tenant.id, "owner"]].sort(),
    );
    // (Each from an address of its own: the harness's sign-ins share one, and its limit is small here.)
    expect(await signInStatus(member.email, member.password, nextAddress())).toBe(200);
    expect(await signInStatus(member.email, "another long passphrase here", nextAddress())).not.toBe(200);
  });

  it("tells the platform's operators in the log, by an email hash, never the address or the token", async () => {
    const member = await suite.h.addUser(suite.a.id, "viewer");
    expect((await signUp({ tenantName: "Logged", email: member.email, password })).status).toBe(202);
    const token = tokenIn(await mailNumber(member.email));
    const line = await waitFor(
      () =>
        suite.h.process
          .output()
          .split("\n")
          .filter((l) => l.includes("sign-up requested with the email of an existing account"))
          .find((l) => l.includes('"existingAccount":true') && l.includes('"slug":"logged"')),
      { description: "the sign-up log line" },
    );
    expect(line).toMatch(/"emailSha256":"[0-9a-f]{16}"/);
    expect(line).not.toContain(member.email);
    expect(suite.h.process.output()).not.toContain(token);
  });
});

describe("no account enumeration", () => {
  it("an existing email and a new one get the same status, body shape and time", async () => {
    const rounds = 8;
    const existing = await Promise.all(
      Array.from({ length: rounds + 1 }, async () => {
        const email = `known-${unique()}@example.test`;
        await suite.h.prisma.user.create({ data: { email, passwordHash: await hashPassword("the account's own passphrase") } });
        return email;
      }),
    );
    const timed = async (email: string) => {
      const address = nextAddress();
      const started = performance.now();
      const res = await signUp({ tenantName: `T ${unique()}`, email, password }, address);
      return { ms: performance.now() - started, res };
    };
    // Warm both paths (compilation, connection pools) before measuring.
    await timed(existing[rounds]!);
    await timed(`warm-${unique()}@example.test`);
    const known: number[] = [];
    const fresh: number[] = [];
    const again: number[] = [];
    // Interleaved, so a drift of the machine's load touches every series alike.
    for (let i = 0; i < rounds; i++) {
      const a = await timed(existing[i]!);
      const b = await timed(`new-${unique()}@example.test`);
      const c = await timed(`new-${unique()}@example.test`);
      for (const r of [a, b, c]) expect(r.res.status).toBe(202);
      if (!a.res.ok || !b.res.ok) throw new Error("expected success");
      expect(shape(a.res.body)).toEqual(shape(b.res.body));
      expect(Object.keys(a.res.body).sort()).toEqual(["email", "expiresAt", "status"]);
      expect(a.res.body.status).toBe(b.res.body.status);
      expect([...a.res.headers.keys()].sort()).toEqual([...b.res.headers.keys()].sort());
      known.push(a.ms);
      fresh.push(b.ms);
      again.push(c.ms);
    }
    // The noise: how far two measurements of the same case (a new email) are apart.
    const noise = Math.abs(median(fresh) - median(again));
    const difference = Math.abs(median(known) - median(fresh));
    console.log(
      `sign-up answer time, median of ${rounds}: existing email ${median(known).toFixed(1)} ms, new email ${median(fresh).toFixed(1)} ms ` +
        `(again ${median(again).toFixed(1)} ms): difference ${difference.toFixed(1)} ms, noise ${noise.toFixed(1)} ms`,
    );
    expect(difference).toBeLessThan(Math.max(15, 3 * noise));
    // Both kinds of address were mailed, each its own text.
    expect((await mailNumber(existing[0]!)).text).toContain("already has a Tick account");
  });
});

describe("the password policy", () => {
  it.each([
    ["a short password", { password: "short" }, "password"],
    ["a password of spaces only", { password: " ".repeat(12) }, "password"],
    ["a common password", { password: "password1234" }, "password"],
    ["a common password in capitals", { password: "PASSWORD1234" }, "password"],
    ["a repeated character", { password: "a".repeat(20) }, "password"],
    ["a keyboard walk", { password: "qwertyuiop12" }, "password"],
    ["a malformed email", { email: "not-an-email" }, "email"],
    ["a malformed tenant ID", { slug: "Not_Valid!" }, "slug"],
    ["an empty tenant name", { tenantName: "" }, "tenantName"],
  ])("sign-up refuses %s with 422 naming the field, and stores and mails nothing", async (_name, override, field) => {
    const email = `v-${unique()}@example.test`;
    const res = await signUp({ tenantName: "Valid", email, password, ...override });
    expect(res.status).toBe(422);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe(problem("validation_failed"));
    expect((res.problem.errors as { path: string }[]).map((e) => e.path.split(".")[0])).toContain(field);
    expect(await suite.h.prisma.signupRequest.count({ where: { email } })).toBe(0);
  });

  it("sign-up takes a long random passphrase, and says why a common one is refused", async () => {
    const common = await signUp({ tenantName: "Policy", email: `p-${unique()}@example.test`, password: "password1234" });
    if (common.ok) throw new Error("expected a problem");
    expect(common.problem.errors).toEqual([{ path: "password", message: expect.stringContaining("too easy to guess") as string }]);
    const passphrase = `${crypto.randomUUID()} tidal quartz ${crypto.randomUUID().slice(0, 8)}`;
    expect((await signUp({ tenantName: "Policy", email: `p-${unique()}@example.test`, password: passphrase })).status).toBe(202);
  });

  it("accepting an invitation with a new account applies the same policy; the invitation is mailed through TICK_MAIL_DIR", async () => {
    const owner = suite.h.client(suite.a.apiKey);
    const email = `invitee-${unique()}@example.test`;
    const invited = await owner.call("inviteMember", { body: { email, role: "viewer" } });
    if (!invited.ok) throw new Error(`invite failed: ${invited.status}`);
    expect(invited.body.emailed).toBe(true);
    const mail = await mailNumber(email);
    expect(mail.text).toContain(invited.body.acceptUrl);
    const token = new URL(invited.body.acceptUrl).hash.replace(/^#token=/, "");
    const accept = (pw: string) => publicClient().call("acceptInvitation", { body: { token, password: pw }, headers: from(nextAddress()) });
    for (const weak of [" ".repeat(12), "password1234", "short"]) {
      const res = await accept(weak);
      expect(res.status, weak).toBe(422);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(problem("validation_failed"));
      expect((res.problem.errors as { path: string }[]).map((e) => e.path)).toContain("password");
    }
    expect(await suite.h.prisma.user.findUnique({ where: { email } })).toBeNull();
    expect((await accept("a long random passphrase for joining")).status).toBe(200);
  });
});

describe("sign-up limits", () => {
  it("limits sign-ups per client address (429 with Retry-After); another address is not affected", async () => {
    const address = "203.0.113.50";
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await signUp({ tenantName: `Flood ${unique()}`, email: `f-${unique()}@example.test`, password }, address)).status);
    expect(statuses).toEqual([202, 202, 202, 202, 202, 202, 429]);
    const limited = await signUp({ tenantName: `Flood ${unique()}`, email: `f-${unique()}@example.test`, password }, address);
    expect(limited.status).toBe(429);
    if (limited.ok) throw new Error("expected a problem");
    expect(limited.problem.type).toBe(problem("rate_limited"));
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await signUp({ tenantName: `Other ${unique()}`, email: `o-${unique()}@example.test`, password }, "203.0.113.51")).status).toBe(202);
  });

  it("limits sign-ups per email, whatever the address (and so the mails one address can be sent)", async () => {
    const email = `e-${unique()}@example.test`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await signUp({ tenantName: `Mail ${unique()}`, email, password }, `198.51.100.${i + 1}`)).status);
    expect(statuses).toEqual([202, 202, 202, 429]);
    await mailNumber(email, 3);
    expect(mailsTo(email)).toHaveLength(3);
  });

  it("limits confirmations per client address", async () => {
    const address = "203.0.113.80";
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await verify("y".repeat(43), address)).status);
    expect(statuses).toEqual([404, 404, 404, 404, 404, 404, 429]);
  });
});

describe("sign-in limits", () => {
  it("failed sign-ins for one email get 429 after the limit; another account is not affected", async () => {
    const target = await suite.h.addUser(suite.a.id, "viewer");
    const other = await suite.h.addUser(suite.a.id, "viewer");
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push(await signInStatus(target.email, "wrong password guess", `192.0.2.${i + 1}`));
    expect(statuses.every((s) => s !== 429 && s !== 200)).toBe(true);
    // Over the email's limit: refused before the password is even checked, from any address, for the
    // rest of the window (a wait, not a lockout: the count resets by itself).
    expect(await signInStatus(target.email, "another guess", "192.0.2.9")).toBe(429);
    expect(await signInStatus(target.email, target.password, "192.0.2.10")).toBe(429);
    // Another person signs in normally, and successful sign-ins never count against an email.
    for (let i = 0; i < 4; i++) expect(await suite.h.signIn(other.email, other.password)).toContain("session-token");
  });

  it("limits sign-in attempts per client address", async () => {
    const address = "192.0.2.200";
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push(await signInStatus(`nobody-${i}@example.test`, "whatever password", address));
    expect(statuses.slice(0, 6).every((s) => s !== 429)).toBe(true);
    expect(statuses[6]).toBe(429);
  });
});

itConformsToOpenApi(suite, 10);
