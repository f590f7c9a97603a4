import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, useConsole } from "./harness";

// Small limits so the tests can reach them; each test uses its own client address (X-Forwarded-For,
// which the console takes as the address its side saw: see clientAddress) so their counts do not mix.
const suite = useConsole({ TICK_SIGNUP: "open", TICK_AUTH_RATE_PER_ADDRESS: "6", TICK_AUTH_RATE_PER_EMAIL: "3", TICK_AUTH_RATE_WINDOW: "10m" });

const problem = (code: string) => `https://tick.dev/problems/${code.replaceAll("_", "-")}`;
let n = 0;
const unique = () => `${Date.now().toString(36)}-${++n}`;
const password = "correct horse battery staple";
const from = (address: string) => ({ "x-forwarded-for": address });
const publicClient = () => suite.h.client("");
const signUp = (body: Record<string, unknown>, address = `10.0.${n % 250}.${(n * 7) % 250}`) =>
  publicClient().call("signUp", { body, headers: from(address) });

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
  it("creates the tenant, its owner, a default queue and a first key that works over REST, all audited", async () => {
    const email = `owner-${unique()}@example.test`;
    const res = await signUp({ tenantName: "Acme Payments, Inc.", email, password, name: "Ada" });
    expect(res.status).toBe(201);
    if (!res.ok) throw new Error("expected success");
    const { tenant, user, firstKey } = res.body;
    expect(tenant.slug).toBe("acme-payments-inc");
    expect(firstKey.key).toMatch(/^tk_/);
    expect(firstKey.apiKey.scopes).toEqual(["admin"]);

    // The key is the tenant's: it lists the default queue and nothing of tenant `a`.
    const queues = await suite.h.client(firstKey.key).call("listQueues", {});
    expect(queues.ok && queues.body.data.map((q) => q.name)).toEqual(["default"]);
    const stored = await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: firstKey.apiKey.id } });
    // Stored hashed, never the secret: everything after the "tk_<prefix>_" (the secret is base64url, so it
    // may itself hold or start with "_"; a split on "_" once made this check compare with "" and fail).
    const secret = firstKey.key.slice(firstKey.key.indexOf("_", 3) + 1);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(stored.hash).not.toContain(secret);
    const owner = await suite.h.prisma.user.findUniqueOrThrow({ where: { id: user.id }, include: { memberships: true } });
    expect(owner.passwordHash).toMatch(/^scrypt\$/);
    expect(owner.memberships.map((m) => [m.tenantId, m.role])).toEqual([[tenant.id, "owner"]]);
    const audit = await suite.h.prisma.auditLog.findMany({ where: { tenantId: tenant.id }, orderBy: { id: "asc" } });
    expect(audit.map((a) => [a.action, a.actorType, a.actorId])).toEqual([
      ["tenant.created", "user", user.id],
      ["member.added", "user", user.id],
      ["api_key.created", "user", user.id],
    ]);

    // The owner signs in to the console and acts on the new tenant with the owner's role.
    const cookie = await suite.h.signIn(email, password);
    const viaSession = await suite.h.sessionClient(cookie, { "tick-tenant": tenant.id }).call("listApiKeys", {});
    expect(viaSession.ok && viaSession.body.data.map((k) => k.id)).toEqual([firstKey.apiKey.id]);
  });

  it("a taken tenant ID is a clear 409 and creates nothing", async () => {
    const slug = `taken-${unique()}`;
    expect((await signUp({ tenantName: "First", slug, email: `a-${unique()}@example.test`, password })).status).toBe(201);
    const users = await suite.h.prisma.user.count();
    const email = `b-${unique()}@example.test`;
    const again = await signUp({ tenantName: "Second", slug, email, password });
    expect(again.status).toBe(409);
    if (again.ok) throw new Error("expected a problem");
    expect(again.problem.type).toBe(problem("conflict"));
    expect(again.problem.detail).toContain(slug);
    expect(await suite.h.prisma.user.count()).toBe(users);
    expect(await suite.h.prisma.user.findUnique({ where: { email } })).toBeNull();
  });

  it("an existing account adds a tenant only with its password (one person, several tenants)", async () => {
    const email = `multi-${unique()}@example.test`;
    const first = await signUp({ tenantName: `One ${unique()}`, email, password });
    expect(first.status).toBe(201);
    const wrong = await signUp({ tenantName: `Two ${unique()}`, email, password: "not the password at all" });
    expect(wrong.status).toBe(409);
    if (wrong.ok) throw new Error("expected a problem");
    expect(wrong.problem.type).toBe(problem("conflict"));
    const second = await signUp({ tenantName: `Two ${unique()}`, email, password });
    expect(second.status).toBe(201);
    const user = await suite.h.prisma.user.findUniqueOrThrow({ where: { email }, include: { memberships: true } });
    expect(user.memberships).toHaveLength(2);
  });

  it.each([
    ["a short password", { password: "short" }, "password"],
    ["a malformed email", { email: "not-an-email" }, "email"],
    ["a malformed tenant ID", { slug: "Not_Valid!" }, "slug"],
    ["an empty tenant name", { tenantName: "" }, "tenantName"],
  ])("refuses %s with 422 naming the field", async (_name, override, field) => {
    const res = await signUp({ tenantName: "Valid", email: `v-${unique()}@example.test`, password, ...override });
    expect(res.status).toBe(422);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.type).toBe(problem("validation_failed"));
    expect(JSON.stringify(res.problem)).toContain(field);
  });

  it("limits sign-ups per client address (429 with Retry-After); another address is not affected", async () => {
    const address = "203.0.113.50";
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await signUp({ tenantName: `Flood ${unique()}`, email: `f-${unique()}@example.test`, password }, address)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201, 201, 429]);
    const limited = await signUp({ tenantName: `Flood ${unique()}`, email: `f-${unique()}@example.test`, password }, address);
    expect(limited.status).toBe(429);
    if (limited.ok) throw new Error("expected a problem");
    expect(limited.problem.type).toBe(problem("rate_limited"));
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await signUp({ tenantName: `Other ${unique()}`, email: `o-${unique()}@example.test`, password }, "203.0.113.51")).status).toBe(201);
  });

  it("limits sign-ups per email, whatever the address", async () => {
    const email = `e-${unique()}@example.test`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await signUp({ tenantName: `Mail ${unique()}`, email, password }, `198.51.100.${i + 1}`)).status);
    expect(statuses).toEqual([201, 201, 201, 429]);
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
