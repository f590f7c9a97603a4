import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { RouteName } from "@tick/contract";
import { itConformsToOpenApi, jobBody, type TestTenant, useConsole } from "./harness";

// Hostile input a security review found answered with 500 (NUL, lone surrogates, 5,000-deep JSON, %00 in
// filters) or stored as given (CR/LF in a target URL): each is a 4xx problem naming the place, and nothing
// is stored. The whole contract is fuzzed in api-fuzz.test.ts; these are the named cases, exactly.
const suite = useConsole({ TICK_SIGNUP: "open", TICK_MAIL_DIR: mkdtempSync(path.join(tmpdir(), "tick-mail-")) });
let t: TestTenant;
beforeAll(async () => {
  t = await suite.h.createTenant();
});

const VALIDATION_FAILED = "https://tick.dev/problems/validation-failed";
const NUL_MESSAGE = "contains a NUL character (U+0000)";
const deep = (levels: number) => '{"a":'.repeat(levels) + "1" + "}".repeat(levels);

type Problem = { type: string; status: number; detail: string; errors?: { path: string; message: string }[] };

/** Sends raw JSON text (the typed client would re-encode it) and records the answer for the OpenAPI check. */
async function sendRaw(route: RouteName, method: string, path: string, text: string, apiKey = t.apiKey): Promise<{ status: number; type: string; problem: Problem }> {
  const res = await fetch(`${suite.h.baseUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: text,
  });
  const body = (await res.json()) as Problem;
  const templated = path.replace(/\/[0-9a-f-]{36}(?=\/|$)/g, "/{id}");
  suite.h.responses.push({ route, method: method.toLowerCase(), path: templated, status: res.status, contentType: res.headers.get("content-type"), body });
  return { status: res.status, type: res.headers.get("content-type") ?? "", problem: body };
}

function expectProblem(res: { status: number; headers?: Headers; type?: string; problem?: Problem; ok?: boolean }, status: number, type: string) {
  expect(res.status).toBe(status);
  expect(res.type ?? res.headers?.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(res.problem?.type).toBe(type);
}

const jobCount = () => suite.h.prisma.job.count({ where: { tenantId: t.id } });

describe("strings with NUL or a lone surrogate", () => {
  it("job create: a NUL in a header value is 422 at target.headers.x-a, and no job is stored", async () => {
    const before = await jobCount();
    const res = await sendRaw("createJob", "POST", "/jobs", '{"target":{"url":"https://93.184.216.34/x","headers":{"x-a":"v\\u0000x"}},"delayMs":3600000}');
    expectProblem(res, 422, VALIDATION_FAILED);
    expect(res.problem.errors).toEqual([{ path: "target.headers.x-a", message: NUL_MESSAGE }]);
    expect(res.problem.detail).toBe(`target.headers.x-a ${NUL_MESSAGE}.`);
    expect(await jobCount()).toBe(before);
  });

  it("job create: a lone surrogate in a value or a key is 422 naming each place; a surrogate pair is fine", async () => {
    const client = suite.h.client(t.apiKey);
    const before = await jobCount();
    const res = await client.call("createJob", { body: jobBody({ metadata: { note: "a\ud800b", ["k\udc00"]: 1 } }) });
    expectProblem(res, 422, VALIDATION_FAILED);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.errors).toEqual([
      { path: "metadata.note", message: "contains a lone surrogate (U+D800): not valid Unicode" },
      { path: "metadata.k\udc00", message: "key contains a lone surrogate (U+DC00): not valid Unicode" },
    ]);
    expect(await jobCount()).toBe(before);
    const fine = await client.call("createJob", { body: jobBody({ metadata: { note: "\ud83d\ude00" } }) });
    expect(fine.status).toBe(201);
    expect(fine.ok && fine.body.metadata).toEqual({ note: "😀" });
  });

  it("batch create (raw body): one NUL refuses the request, naming the item, and stores none of the batch", async () => {
    const before = await jobCount();
    const jobs = [jobBody(), jobBody({ target: { url: "https://93.184.216.34/x", headers: { "x-a": "v\u0000x" } } })];
    const res = await suite.h.client(t.apiKey).call("createJobsBatch", { body: { jobs } });
    expectProblem(res, 422, VALIDATION_FAILED);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.errors).toEqual([{ path: "jobs[1].target.headers.x-a", message: NUL_MESSAGE }]);
    expect(await jobCount()).toBe(before);
  });

  // The other writes the review found storing a NUL into Postgres (a 500 there): each is refused the same way.
  const endpointBody = { url: "https://93.184.216.34/hook", events: ["job.dead"] };
  const scheduleBody = { name: "n", cron: "*/5 * * * *", timezone: "UTC", paused: true, job: { target: { url: "https://93.184.216.34/s" } } };
  it.each([
    ["createWebhookEndpoint", { ...endpointBody, description: "d\u0000" }, "description"],
    ["createApiKey", { name: "k\u0000", scopes: ["jobs:read"] }, "name"],
    ["createSchedule", { ...scheduleBody, name: "s\u0000" }, "name"],
    ["createSchedule", { ...scheduleBody, job: { target: { url: "https://93.184.216.34/s", body: "\u0000" } } }, "job.target.body"],
    ["pauseDependency", { reason: "r\u0000" }, "reason"],
    ["createDlqReplay", { filter: { queue: "q\u0000" }, dryRun: true }, "filter.queue"],
    ["signUp", { tenantName: "T\u0000", email: "nul@example.test", password: "correct horse battery" }, "tenantName"],
    ["previewInvitation", { token: `${"x".repeat(30)}\u0000` }, "token"],
  ] as [RouteName, Record<string, unknown>, string][])("%s: a NUL at %j is 422 at its path", async (route, body, path) => {
    const args = route === "pauseDependency" ? { params: { key: "93.184.216.34" }, body } : { body };
    const res = await suite.h.client(t.apiKey).call(route, args as never);
    expectProblem(res, 422, VALIDATION_FAILED);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.errors).toEqual([{ path, message: NUL_MESSAGE }]);
  });

  it("nothing of those was stored", async () => {
    const [endpoints, schedules, tenants] = await Promise.all([
      suite.h.prisma.webhookEndpoint.count({ where: { tenantId: t.id } }),
      suite.h.prisma.schedule.count({ where: { tenantId: t.id } }),
      suite.h.prisma.tenant.count({ where: { name: { startsWith: "T" } } }),
    ]);
    expect([endpoints, schedules, tenants]).toEqual([0, 0, 0]);
  });
});

describe("nesting", () => {
  it("metadata nested 5,000 levels is 422 naming where it passes 32 levels, before it is parsed; nothing stored", async () => {
    const before = await jobCount();
    const res = await sendRaw("createJob", "POST", "/jobs", `{"target":{"url":"https://93.184.216.34/x"},"delayMs":3600000,"metadata":${deep(5000)}}`);
    expectProblem(res, 422, VALIDATION_FAILED);
    expect(res.problem.errors).toEqual([{ path: `metadata${".a".repeat(31)}`, message: "is nested deeper than 32 levels of arrays and objects" }]);
    expect(await jobCount()).toBe(before);
  });

  it("the same in a batch and as a whole body", async () => {
    const batch = await sendRaw("createJobsBatch", "POST", "/jobs/batch", `{"jobs":[{"target":{"url":"https://93.184.216.34/x"},"metadata":${deep(5000)}}]}`);
    expectProblem(batch, 422, VALIDATION_FAILED);
    expect(batch.problem.errors?.[0]?.path).toMatch(/^jobs\[0\]\.metadata(\.a)+$/);
    const whole = await sendRaw("createQueue", "POST", "/queues", "[".repeat(5000) + "]".repeat(5000));
    expectProblem(whole, 422, VALIDATION_FAILED);
  });

  it("32 levels are accepted", async () => {
    // The body is level 1 and metadata level 2: 30 more objects inside it make 32.
    const res = await sendRaw("createJob", "POST", "/jobs", `{"target":{"url":"https://93.184.216.34/x"},"delayMs":3600000,"metadata":${deep(30)}}`);
    expect(res.status).toBe(201);
  });
});

describe("query and path parameters", () => {
  it.each([
    ["listAuditLog", "targetId", "%00"],
    ["listDeadJobs", "queue", "%00"],
    ["listJobs", "queue", "%00"],
  ] as [RouteName, string, string][])("%s: a NUL (sent as %s=%s) is 422 naming the parameter", async (route, name) => {
    const res = await suite.h.client(t.apiKey).call(route, { query: { [name]: "\u0000" } } as never);
    expectProblem(res, 422, VALIDATION_FAILED);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.errors).toEqual([{ path: name, message: NUL_MESSAGE }]);
    expect(res.problem.detail).toBe(`Query parameter ${name} ${NUL_MESSAGE}.`);
  });

  // (A lone surrogate cannot travel in a URL: percent-encoding is UTF-8, and an encoded surrogate decodes to U+FFFD.)
  it("CR/LF, TAB and other control characters in a query value are refused too", async () => {
    for (const value of ["a\r\nb", "a\tb", "\u0001", "\u007f"]) {
      const res = await suite.h.client(t.apiKey).call("listJobs", { query: { dependency: value } });
      expectProblem(res, 422, VALIDATION_FAILED);
    }
    expect((await suite.h.client(t.apiKey).call("listJobs", { query: { dependency: "é 😀" } })).status).toBe(200);
  });

  it("a path parameter holding a NUL names no resource: 404", async () => {
    const res = await suite.h.client(t.apiKey).call("resumeDependency", { params: { key: "a\u0000b" } });
    expectProblem(res, 404, "https://tick.dev/problems/not-found");
  });
});

describe("control characters in URLs and headers", () => {
  it("CR/LF in a job's target URL is 422 at target.url, and nothing is stored", async () => {
    const before = await jobCount();
    const res = await suite.h.client(t.apiKey).call("createJob", { body: jobBody({ target: { url: "https://93.184.216.34/x\r\nHost: evil.example" } }) });
    expectProblem(res, 422, VALIDATION_FAILED);
    if (res.ok) throw new Error("expected a problem");
    expect(res.problem.errors).toEqual([{ path: "target.url", message: "URLs may not contain control characters (CR, LF, TAB, any other below U+0020, or DEL)" }]);
    expect(await jobCount()).toBe(before);
  });

  it("a TAB in a callback URL, a LF in a webhook endpoint URL, CR in a schedule's target: each 422 at its field", async () => {
    const client = suite.h.client(t.apiKey);
    const cases = [
      [await client.call("createJob", { body: jobBody({ callbackUrl: "https://93.184.216.34/\tcb" }) }), "callbackUrl"],
      [await client.call("createWebhookEndpoint", { body: { url: "https://93.184.216.34/h\nx", events: ["job.dead"] } }), "url"],
      [await client.call("createSchedule", { body: { name: "s", cron: "*/5 * * * *", timezone: "UTC", job: { target: { url: "https://93.184.216.34/\rs" } } } }), "job.target.url"],
    ] as const;
    for (const [res, path] of cases) {
      expectProblem(res, 422, VALIDATION_FAILED);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.errors?.map((e) => e.path)).toEqual([path]);
    }
    expect(await suite.h.prisma.webhookEndpoint.count({ where: { tenantId: t.id } })).toBe(0);
  });

  it("header values the worker could not send (line breaks, other controls, above U+00FF) are 422; tab and Latin-1 are fine", async () => {
    const client = suite.h.client(t.apiKey);
    for (const value of ["a\r\nb", "a\u0001", "a\u007f", "😀"]) {
      const res = await client.call("createJob", { body: jobBody({ target: { url: "https://93.184.216.34/x", headers: { "x-a": value } } }) });
      expectProblem(res, 422, VALIDATION_FAILED);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.errors?.map((e) => e.path)).toEqual(["target.headers.x-a"]);
    }
    const fine = await client.call("createJob", { body: jobBody({ target: { url: "https://93.184.216.34/x", headers: { "x-a": "José\tok" } } }) });
    expect(fine.status).toBe(201);
  });
});

describe("next-auth's credentials sign-in (outside the API pipeline)", () => {
  it("an email with a NUL is a refused sign-in, not a 500", async () => {
    const csrf = await fetch(`${suite.h.baseUrl}/api/auth/csrf`);
    const cookie = csrf.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    for (const email of ["a\u0000b@example.test", "\ud800@example.test", `${"x".repeat(100_000)}@example.test`]) {
      const res = await fetch(`${suite.h.baseUrl}/api/auth/callback/credentials`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie },
        body: new URLSearchParams({ csrfToken, email, password: "correct horse battery", json: "true" }),
      });
      expect(res.status, `sign-in with ${JSON.stringify(email.slice(0, 30))}`).toBeLessThan(500);
      expect([...res.headers.getSetCookie()].some((c) => c.includes("session-token="))).toBe(false);
      await res.body?.cancel();
    }
  });
});

itConformsToOpenApi(suite, 20);
