// Sign-in limits against the built console: which address a request counts under (the socket's, or with
// TICK_TRUSTED_PROXIES the entry the proxies appended, never a client's choice), and that strangers
// failing from elsewhere slow themselves down without keeping the owner out (auth-limits.ts).
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsole, type ConsoleHarness } from "./harness";

const RATE_LIMITED = "https://tick.dev/problems/rate-limited";

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** One HTTP request from a chosen local address (127.0.0.x all reach the console on loopback). */
function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: string; from?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "GET", headers: options.headers, localAddress: options.from ?? "127.0.0.1" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) for (const v of [value ?? []].flat()) headers.append(name, v);
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString("utf8") });
      });
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

interface SignInAttempt {
  status: number;
  /** Where next-auth's client would go next (`?error=RateLimited` when limited, `?error=...` on a wrong password). */
  url: string;
  retryAfter: number | null;
  signedIn: boolean;
}

/**
 * One password sign-in through next-auth's credentials endpoint, refused or not: from a local address
 * (the console's socket sees it) with extra request headers (what a proxy, or the client, wrote).
 */
async function attemptSignIn(h: ConsoleHarness, email: string, password: string, headers: Record<string, string> = {}, from?: string): Promise<SignInAttempt> {
  const csrf = await send(`${h.baseUrl}/api/auth/csrf`, { from });
  const cookie = csrf.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  const { csrfToken } = JSON.parse(csrf.body) as { csrfToken: string };
  const res = await send(`${h.baseUrl}/api/auth/callback/credentials`, {
    method: "POST",
    from,
    headers: { "content-type": "application/x-www-form-urlencoded", cookie, ...headers },
    body: new URLSearchParams({ csrfToken, email, password, json: "true" }).toString(),
  });
  const body = ((): { url?: string; type?: string } => {
    try {
      return JSON.parse(res.body) as { url?: string; type?: string };
    } catch {
      return {};
    }
  })();
  if (res.status === 429) expect(body.type).toBe(RATE_LIMITED);
  return {
    status: res.status,
    url: body.url ?? res.headers.get("location") ?? "",
    retryAfter: res.headers.has("retry-after") ? Number(res.headers.get("retry-after")) : null,
    signedIn: res.headers.getSetCookie().some((c) => /session-token=[^;]/.test(c)),
  };
}

/** A console of its own for each describe block: its limits and proxy count are env, read at start. */
function useOwnConsole(env: Record<string, string>): { h: ConsoleHarness; tenantId: string } {
  const suite = {} as { h: ConsoleHarness; tenantId: string };
  beforeAll(async () => {
    suite.h = await startConsole(env);
    suite.tenantId = (await suite.h.createTenant()).id;
  });
  afterAll(async () => suite.h?.stop());
  return suite;
}

describe("with no trusted proxy (TICK_TRUSTED_PROXIES unset)", () => {
  const suite = useOwnConsole({ TICK_AUTH_RATE_PER_ADDRESS: "4", TICK_AUTH_RATE_PER_EMAIL: "3", TICK_AUTH_RATE_WINDOW: "10m" });

  it("a client-chosen X-Forwarded-For, or a forged copy of the console's socket-address header, does not change the counter", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++) {
      // A new email each time, so only the per-address limit can refuse.
      const headers = { "x-forwarded-for": `198.51.100.${i}`, "x-tick-socket-address": `forged 203.0.113.${i}` };
      statuses.push((await attemptSignIn(suite.h, `nobody-${i}@example.test`, "some wrong password", headers, "127.0.0.1")).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429, 429]);
    // The connection's address is what counts: another one has a count of its own.
    expect((await attemptSignIn(suite.h, "nobody-7@example.test", "some wrong password", { "x-forwarded-for": "198.51.100.1" }, "127.0.0.2")).status).toBe(401);
  });
});

describe("behind one trusted proxy (TICK_TRUSTED_PROXIES=1)", () => {
  const suite = useOwnConsole({
    TICK_TRUSTED_PROXIES: "1",
    TICK_AUTH_RATE_PER_ADDRESS: "12",
    TICK_AUTH_RATE_PER_EMAIL: "3",
    TICK_AUTH_RATE_WINDOW: "10m",
  });
  // What the proxy sends on: whatever the client wrote, then the address the proxy saw.
  const via = (address: string, clientWrote?: string) => ({ "x-forwarded-for": clientWrote ? `${clientWrote}, ${address}` : address });
  const addUser = () => suite.h.addUser(suite.tenantId, "viewer");

  it("counts per proxy-appended address: what the client wrote before it is ignored, and two addresses count apart", async () => {
    const statuses: number[] = [];
    // Through two proxy instances (two socket addresses): the appended entry is what counts, not the proxy.
    for (let i = 1; i <= 13; i++) {
      const attempt = await attemptSignIn(suite.h, `x-${i}@example.test`, "wrong password", via("192.0.2.10", `10.0.0.${i}`), `127.0.0.${1 + (i % 2)}`);
      statuses.push(attempt.status);
    }
    expect(statuses).toEqual([...Array<number>(12).fill(401), 429]);
    expect((await attemptSignIn(suite.h, "y@example.test", "wrong password", via("192.0.2.11", "192.0.2.10"))).status).toBe(401);
  });

  it("strangers failing from elsewhere are refused; the owner still signs in from an address they used before", async () => {
    const owner = await addUser();
    const home = via("192.0.2.20");
    expect((await attemptSignIn(suite.h, owner.email, owner.password, home)).signedIn).toBe(true);

    // A stranger guesses from another address until the email's ceiling (3 failures).
    const stranger = via("198.51.100.66");
    const guesses: number[] = [];
    for (let i = 0; i < 4; i++) guesses.push((await attemptSignIn(suite.h, owner.email, `guess number ${i}`, stranger)).status);
    expect(guesses).toEqual([401, 401, 401, 429]);
    const refused = await attemptSignIn(suite.h, owner.email, owner.password, via("198.51.100.67"));
    expect(refused.status).toBe(429); // a third, unknown address: the email's ceiling holds, right password or not
    expect(refused.url).toMatch(/error=RateLimited/);
    expect(refused.retryAfter).toBeGreaterThan(0);

    // The owner, from home, is not held to what the stranger did.
    const again = await attemptSignIn(suite.h, owner.email, owner.password, home);
    expect(again.status).toBe(200);
    expect(again.signedIn).toBe(true);
  });

  it("a known address is limited by its own failures, which a successful sign-in clears", async () => {
    const owner = await addUser();
    const home = via("192.0.2.30");
    const office = via("192.0.2.31");
    expect((await attemptSignIn(suite.h, owner.email, owner.password, home)).signedIn).toBe(true);
    expect((await attemptSignIn(suite.h, owner.email, owner.password, office)).signedIn).toBe(true);

    // Two typos, a success, two more: the success forgot the first two, so the owner is never refused.
    for (let i = 0; i < 2; i++) expect((await attemptSignIn(suite.h, owner.email, "typo password", home)).status).toBe(401);
    expect((await attemptSignIn(suite.h, owner.email, owner.password, home)).signedIn).toBe(true);
    for (let i = 0; i < 2; i++) expect((await attemptSignIn(suite.h, owner.email, "typo password", home)).status).toBe(401);
    expect((await attemptSignIn(suite.h, owner.email, owner.password, home)).signedIn).toBe(true);

    // Three failures in a row at home (the pair's limit): home is refused, even with the right password.
    for (let i = 0; i < 3; i++) expect((await attemptSignIn(suite.h, owner.email, "typo password", home)).status).toBe(401);
    const limited = await attemptSignIn(suite.h, owner.email, owner.password, home);
    expect(limited.status).toBe(429);
    expect(limited.retryAfter).toBeGreaterThan(0);
    expect(limited.signedIn).toBe(false);
    // The office has its own count, and an unknown address meets the email's (which every failure fed).
    expect((await attemptSignIn(suite.h, owner.email, owner.password, office)).signedIn).toBe(true);
    expect((await attemptSignIn(suite.h, owner.email, owner.password, via("192.0.2.32"))).status).toBe(429);
  });

  it("fails open when Redis does not answer: the limits are skipped, the password is still checked", async () => {
    const owner = await addUser();
    const elsewhere = via("198.51.100.90");
    for (let i = 0; i < 3; i++) expect((await attemptSignIn(suite.h, owner.email, "wrong password", elsewhere)).status).toBe(401);
    expect((await attemptSignIn(suite.h, owner.email, owner.password, elsewhere)).status).toBe(429);
    suite.h.redisProxy.cut();
    try {
      expect((await attemptSignIn(suite.h, owner.email, "wrong password", elsewhere)).status).toBe(401);
      expect((await attemptSignIn(suite.h, owner.email, owner.password, elsewhere)).signedIn).toBe(true);
    } finally {
      suite.h.redisProxy.restore();
    }
  });
});
