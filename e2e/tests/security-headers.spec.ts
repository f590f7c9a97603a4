import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test, type Page, type Response } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

interface Violation {
  directive: string;
  blocked: string;
  source: string;
  sample: string;
}

declare global {
  interface Window {
    cspViolations: Violation[];
  }
}

/** Records every CSP violation of the page's documents on window, from before the first script runs. */
async function recordViolations(page: Page) {
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.cspViolations.push({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, sample: e.sample });
    });
  });
}

/** What the browser said that is about a policy: Chromium logs each refusal ("Refused to …", "Content Security Policy"). */
function collectPolicyMessages(page: Page): string[] {
  const messages: string[] = [];
  page.on("console", (m) => {
    if (/content security policy|refused to/i.test(m.text())) messages.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (err) => messages.push(`pageerror: ${err.message}`));
  return messages;
}

/** The directives of a CSP header: name → its sources. */
function directives(csp: string | undefined): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const directive of (csp ?? "").split(";")) {
    const [name, ...sources] = directive.trim().split(/\s+/);
    if (name) map.set(name.toLowerCase(), sources);
  }
  return map;
}

/** The page's CSP: a fresh nonce in script-src with 'strict-dynamic', no inline or eval, no framing. Returns the nonce. */
async function expectNonceCsp(response: Response | null): Promise<string> {
  expect(response, "the page answered").not.toBeNull();
  const headers = await response!.allHeaders();
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["referrer-policy"]).toBe("strict-origin-when-cross-origin");
  // Served over plain http (npm start): no HSTS.
  expect(headers["strict-transport-security"]).toBeUndefined();
  const csp = headers["content-security-policy"];
  expect(csp, "a Content-Security-Policy header").toBeTruthy();
  const d = directives(csp);
  const scriptSrc = d.get("script-src") ?? [];
  const nonce = scriptSrc.find((s) => s.startsWith("'nonce-"))?.slice("'nonce-".length, -1);
  expect(nonce, `a nonce in script-src (${csp})`).toMatch(/^[A-Za-z0-9+/]{16,}={0,2}$/);
  expect(scriptSrc).toContain("'strict-dynamic'");
  expect(scriptSrc).not.toContain("'unsafe-inline'");
  expect(scriptSrc).not.toContain("'unsafe-eval'");
  expect(d.get("object-src")).toEqual(["'none'"]);
  expect(d.get("base-uri")).toEqual(["'self'"]);
  expect(d.get("form-action")).toEqual(["'self'"]);
  expect(d.get("frame-ancestors")).toEqual(["'none'"]);
  return nonce!;
}

/**
 * Opens a page and judges it: the header's nonce CSP, every inline <script> carrying this response's
 * nonce, React hydrated (so Next's scripts ran under the policy), every query loaded, and no violation
 * or refusal reported at any point.
 */
async function checkPage(page: Page, messages: string[], path: string, { status = 200, ready }: { status?: number; ready?: () => Promise<void> } = {}) {
  await test.step(path, async () => {
    messages.length = 0;
    const response = await page.goto(path);
    expect(response?.status(), `${path} status`).toBe(status);
    const nonce = await expectNonceCsp(response);
    const scripts = await page.evaluate(() =>
      Array.from(document.querySelectorAll("script")).map((s) => ({ inline: !s.src, nonce: s.nonce ?? "", text: s.textContent?.slice(0, 80) ?? "" })),
    );
    expect(scripts.filter((s) => s.inline).length, "Next's inline scripts are on the page").toBeGreaterThan(0);
    expect(scripts.filter((s) => s.inline && s.nonce !== nonce), "inline scripts without this response's nonce").toEqual([]);
    // What the parser refused is reported by now (goto waits for the load event); then what running the page does.
    expect(await page.evaluate(() => window.cspViolations), `CSP violations loading ${path}`).toEqual([]);
    // hydrateRoot marks the elements it adopts; a blocked script leaves the server's HTML without it.
    await page.waitForFunction(() => Object.keys(document.body).some((k) => k.startsWith("__reactFiber")), undefined, { timeout: 10_000 });
    await expect(page.getByTestId("loading")).toHaveCount(0);
    await ready?.();
    await expect(page).toHaveTitle(/\S/);
    expect(await page.evaluate(() => window.cspViolations), `CSP violations on ${path}`).toEqual([]);
    expect(messages, `policy messages on ${path}`).toEqual([]);
  });
}

test("every console page is served with a nonce CSP it runs under: no violation, no inline script without the nonce", async ({ page, browser }) => {
  // Twenty pages, each hydrated and its queries loaded: about 30 s on a 2-core machine.
  test.setTimeout(180_000);
  const job = await client.call("createJob", { body: { target: { url: "http://127.0.0.1:9/csp" }, delayMs: 3_600_000 }, idempotencyKey: `csp-${Date.now()}` });
  if (!job.ok) throw new Error(JSON.stringify(job.problem));
  const schedule = await client.call("createSchedule", {
    body: { name: `e2e-csp-${Date.now()}`, cron: "0 3 * * *", timezone: "UTC", paused: true, job: { target: { url: "http://127.0.0.1:9/csp" } } },
  });
  if (!schedule.ok) throw new Error(JSON.stringify(schedule.problem));

  try {
    // Anonymous: the public pages, the sign-in form itself included.
    const anonymous = await browser.newContext();
    try {
      const anon = await anonymous.newPage();
      await recordViolations(anon);
      const anonMessages = collectPolicyMessages(anon);
      await checkPage(anon, anonMessages, "/login", { ready: () => expect(anon.getByRole("button", { name: "Sign in" })).toBeVisible() });
      await checkPage(anon, anonMessages, "/signup", { ready: () => expect(anon.getByRole("button", { name: /create/i })).toBeVisible() });
      // Without a token the confirmation page says the link is not valid: a page that ran its script.
      await checkPage(anon, anonMessages, "/signup/verify", { ready: () => expect(anon.getByTestId("signup-verify-error")).toBeVisible() });
      await checkPage(anon, anonMessages, "/invite", { ready: () => expect(anon.getByRole("heading", { name: "Join a team on Tick" })).toBeVisible() });
      await checkPage(anon, anonMessages, "/docs/api", {
        ready: () => expect(anon.getByRole("heading", { level: 1, name: "Tick API reference" })).toBeVisible(),
      });
      await checkPage(anon, anonMessages, "/no-such-page", { status: 404, ready: () => expect(anon.getByRole("heading", { name: "Page not found" })).toBeVisible() });
    } finally {
      await anonymous.close();
    }

    await recordViolations(page);
    const messages = collectPolicyMessages(page);
    await signIn(page, state.email, state.password);
    expect(await page.evaluate(() => window.cspViolations), "CSP violations while signing in").toEqual([]);
    expect(messages, "policy messages while signing in").toEqual([]);

    const heading = (name: string | RegExp) => () => expect(page.getByRole("heading", { name }).first()).toBeVisible();
    const nav = () => expect(page.getByRole("navigation", { name: "Console" })).toBeVisible();
    // The dashboard's charts draw on canvases once their script has run.
    await checkPage(page, messages, "/", { ready: () => expect(page.getByTestId("overview").locator("canvas").first()).toBeAttached() });
    await checkPage(page, messages, "/jobs", { ready: nav });
    await checkPage(page, messages, "/jobs/new", { ready: () => expect(page.getByRole("form", { name: "New job" })).toBeVisible() });
    await checkPage(page, messages, `/jobs/${job.body.id}`, { ready: () => expect(page.getByText(job.body.id).first()).toBeVisible() });
    await checkPage(page, messages, "/schedules", { ready: () => expect(page.getByText(schedule.body.name).first()).toBeVisible() });
    await checkPage(page, messages, "/schedules/new", { ready: () => expect(page.getByRole("form", { name: "New schedule" })).toBeVisible() });
    await checkPage(page, messages, `/schedules/${schedule.body.id}`, { ready: heading(schedule.body.name) });
    for (const path of ["/queues", "/dlq", "/keys", "/webhooks", "/audit", "/members", "/settings", "/account", "/operator", "/operator/status"]) {
      await checkPage(page, messages, path, { ready: nav });
    }
    await checkPage(page, messages, "/docs/api", { ready: heading("Tick API reference") });
    await checkPage(page, messages, "/jobs/nowhere/else", { status: 404, ready: heading("Page not found") });

    // A client-side navigation runs under the same policy (the router loads the next page's chunks).
    messages.length = 0;
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Queues" }).click();
    await expect(page).toHaveURL(/\/queues$/);
    await expect(page.getByTestId("loading")).toHaveCount(0);
    expect(await page.evaluate(() => window.cspViolations), "CSP violations after a client-side navigation").toEqual([]);
    expect(messages).toEqual([]);
  } finally {
    await client.call("cancelJob", { params: { id: job.body.id } });
    await client.call("deleteSchedule", { params: { id: schedule.body.id } });
  }
});

test("another site cannot frame the console: chromium refuses the frame and the sign-in form never loads in it", async ({ page }) => {
  const loginUrl = `${state.consoleUrl}/login`;
  // A page on another origin (another port of 127.0.0.1) framing the console's sign-in page, and, as a
  // control that frames load at all here, a page of its own.
  const server = http.createServer((req, res) => {
    if (req.url === "/own") {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>own</title><p id=own>framed fine</p>");
      return;
    }
    res.writeHead(200, { "content-type": "text/html" }).end(
      `<!doctype html><title>framer</title>
       <iframe name=own src="/own" title=own></iframe>
       <iframe name=console src="${loginUrl}" title=console width=800 height=600></iframe>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  try {
    const framer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const messages: string[] = [];
    page.on("console", (m) => messages.push(m.text()));
    const consoleResponse = page.waitForResponse((r) => r.url() === loginUrl);
    await page.goto(framer);

    // The console answered, with the policy that forbids this.
    const res = await consoleResponse;
    const headers = await res.allHeaders();
    expect(directives(headers["content-security-policy"]).get("frame-ancestors")).toEqual(["'none'"]);
    expect(headers["x-frame-options"]).toBe("DENY");

    await expect(page.frameLocator("iframe[name=own]").locator("#own")).toHaveText("framed fine");
    // Chromium says why it refused, and shows its error page in the frame instead of the console.
    await expect.poll(() => messages.find((m) => m.includes("frame-ancestors") && m.includes(state.consoleUrl)), { timeout: 10_000 }).toBeTruthy();
    const frame = page.frame({ name: "console" });
    expect(frame, "the console's frame").not.toBeNull();
    expect(frame!.url()).toMatch(/^chrome-error:/);
    await expect(page.frameLocator("iframe[name=console]").getByLabel("Email")).toHaveCount(0);
    await expect(page.frameLocator("iframe[name=console]").getByRole("button", { name: "Sign in" })).toHaveCount(0);
  } finally {
    await new Promise((r) => server.close(r));
  }
});

test("API responses: nosniff, a referrer policy, a CSP that allows nothing, and no page nonce (the proxy skips /api)", async ({ request }) => {
  const responses = [
    await request.get("/api/v1/jobs", { headers: { authorization: `Bearer ${state.apiKey}` } }),
    await request.get("/api/v1/jobs"), // 401, problem+json
    await request.get("/api/v1/openapi.json"),
    await request.post("/api/v1/jobs", { headers: { authorization: `Bearer ${state.apiKey}` }, data: { target: { url: "nope" } } }), // 422, problem+json
  ];
  expect(responses.map((r) => r.status())).toEqual([200, 401, 200, 422]);
  for (const res of responses) {
    const h = res.headers();
    expect(h["x-content-type-options"]).toBe("nosniff");
    expect(h["referrer-policy"]).toBe("strict-origin-when-cross-origin");
    expect(h["x-frame-options"]).toBe("DENY");
    const csp = directives(h["content-security-policy"]);
    expect(csp.get("default-src")).toEqual(["'none'"]);
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
    expect(h["content-security-policy"]).not.toContain("nonce-");
    expect(h["strict-transport-security"]).toBeUndefined();
  }
});

test("each page view gets its own nonce; HSTS and upgrade-insecure-requests only when served over https", async ({ request }) => {
  const [a, b] = [await request.get("/login"), await request.get("/login")];
  const nonceOf = (csp: string | undefined) => /'nonce-([^']+)'/.exec(csp ?? "")?.[1];
  expect(nonceOf(a.headers()["content-security-policy"])).toBeTruthy();
  expect(nonceOf(a.headers()["content-security-policy"])).not.toBe(nonceOf(b.headers()["content-security-policy"]));
  expect(a.headers()["content-security-policy"]).not.toContain("upgrade-insecure-requests");

  // Behind a TLS-terminating proxy (x-forwarded-proto: https): pages and the API both say https only.
  const https = { "x-forwarded-proto": "https" };
  const page = await request.get("/login", { headers: https });
  expect(page.headers()["strict-transport-security"]).toMatch(/^max-age=\d{7,}/);
  expect(directives(page.headers()["content-security-policy"]).has("upgrade-insecure-requests")).toBe(true);
  const api = await request.get("/api/v1/openapi.json", { headers: https });
  expect(api.headers()["strict-transport-security"]).toMatch(/^max-age=\d{7,}/);
  // A create with an API key is answered ahead of Next's router (direct-api.ts): the same header.
  const create = await request.post("/api/v1/jobs", { headers: { ...https, authorization: `Bearer ${state.apiKey}` }, data: { target: { url: "nope" } } });
  expect(create.status()).toBe(422);
  expect(create.headers()["strict-transport-security"]).toMatch(/^max-age=\d{7,}/);
});
