import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

const unauthorized = "https://tick.dev/problems/unauthorized";
const forbidden = "https://tick.dev/problems/forbidden";

describe("API key authentication", () => {
  it.each([
    ["no header", undefined],
    ["not Bearer", "Basic dXNlcjpwYXNz"],
    ["malformed key", "Bearer not-a-key"],
    ["unknown prefix", "Bearer tk_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"],
  ])("refuses %s with 401", async (_name, authorization) => {
    const res = await fetch(`${suite.h.baseUrl}/api/v1/jobs`, { headers: authorization ? { authorization } : {} });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(((await res.json()) as { type: string }).type).toBe(unauthorized);
  });

  it("refuses a key whose secret part is wrong, though the prefix exists", async () => {
    const [tk, prefix] = suite.a.apiKey.split("_");
    const res = await fetch(`${suite.h.baseUrl}/api/v1/jobs`, { headers: { authorization: `Bearer ${tk}_${prefix}_${"x".repeat(32)}` } });
    expect(res.status).toBe(401);
  });

  it("a revoked key fails on the very next request", async () => {
    const { apiKey, keyId } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    const client = suite.h.client(apiKey);
    expect((await client.call("listJobs", {})).status).toBe(200);
    const revoked = await suite.h.client(suite.a.apiKey).call("revokeApiKey", { params: { id: keyId } });
    expect(revoked.status).toBe(200);
    const after = await client.call("listJobs", {});
    expect(after.status).toBe(401);
    if (after.ok) throw new Error("expected a problem");
    expect(after.problem.detail).toMatch(/revoked/);
    expect(await suite.h.prisma.auditLog.count({ where: { tenantId: suite.a.id, action: "api_key.revoked", targetId: keyId } })).toBe(1);
  });

  it("an expired key fails", async () => {
    const { apiKey, keyId } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    await suite.h.prisma.apiKey.update({ where: { id: keyId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await suite.h.client(apiKey).call("listJobs", {})).status).toBe(401);
  });
});

describe("scopes", () => {
  it("refuses an operation the key's scopes do not cover (403), allows the ones they do", async () => {
    const { apiKey } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    const client = suite.h.client(apiKey);
    expect((await client.call("listJobs", {})).status).toBe(200);
    for (const res of [
      await client.call("createJob", { body: jobBody() }),
      await client.call("createQueue", { body: { name: "x" } }),
      await client.call("listQueues", {}),
      await client.call("listApiKeys", {}),
    ]) {
      expect(res.status).toBe(403);
      if (res.ok) throw new Error("expected a problem");
      expect(res.problem.type).toBe(forbidden);
    }
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(0);
  });

  it("a key can only mint keys with scopes it holds", async () => {
    const { apiKey } = await suite.h.addKey(suite.a.id, ["keys:write", "jobs:read"]);
    const client = suite.h.client(apiKey);
    const escalate = await client.call("createApiKey", { body: { name: "sneaky", scopes: ["admin"] } });
    expect(escalate.status).toBe(403);
    const fine = await client.call("createApiKey", { body: { name: "reader", scopes: ["jobs:read"] } });
    expect(fine.status).toBe(201);
    if (!fine.ok) throw new Error("expected success");
    expect(fine.body.key).toMatch(/^tk_[A-Za-z0-9]{12}_/);
    // The new key works, and listings never show a secret.
    expect((await suite.h.client(fine.body.key).call("listJobs", {})).status).toBe(200);
    const list = await suite.h.client(suite.a.apiKey).call("listApiKeys", {});
    if (!list.ok) throw new Error("expected success");
    expect(JSON.stringify(list.body)).not.toContain(fine.body.key);
    expect(list.body.data.find((k) => k.id === fine.body.apiKey.id)?.prefix).toBe(fine.body.key.split("_").slice(0, 2).join("_"));
    const stored = await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: fine.body.apiKey.id } });
    expect(stored.hash).not.toContain(fine.body.key);
  });

  it("keys of one tenant cannot revoke another tenant's keys", async () => {
    const b = await suite.h.createTenant();
    const res = await suite.h.client(b.apiKey).call("revokeApiKey", { params: { id: suite.a.keyId } });
    expect(res.status).toBe(404);
    expect((await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: suite.a.keyId } })).revokedAt).toBeNull();
  });
});

describe("Vary", () => {
  it("API and health answers do not vary on Next's router headers (rsc, next-router-*); console pages still do", async () => {
    const get = (path: string, headers: Record<string, string> = {}) => fetch(`${suite.h.baseUrl}${path}`, { headers, redirect: "manual" });
    const answers = {
      "GET /api/v1/jobs": await get("/api/v1/jobs", { authorization: `Bearer ${suite.a.apiKey}` }),
      "GET /api/v1/jobs (401)": await get("/api/v1/jobs"),
      "GET /api/v1/openapi.json": await get("/api/v1/openapi.json"),
      "GET /healthz": await get("/healthz"),
      "GET /readyz": await get("/readyz"),
    };
    for (const [name, res] of Object.entries(answers)) {
      expect(res.headers.get("vary") ?? "", `Vary of ${name}`).not.toMatch(/rsc|next-router/i);
    }
    expect(answers["GET /api/v1/jobs"].status).toBe(200);
    expect((await get("/login")).headers.get("vary")).toMatch(/\brsc\b/);
  });
});

itConformsToOpenApi(suite);
