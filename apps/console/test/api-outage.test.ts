import { describe, expect, it } from "vitest";
import type { ApiResult } from "@tick/client";
import type { RouteName } from "@tick/contract";
import { waitFor } from "@tick/testing";
import { itConformsToOpenApi, jobBody, useConsole, type ConsoleHarness } from "./harness";

const suite = useConsole();

describe("database unreachable (S3)", () => {
  it("answers 503 + Retry-After and creates nothing; a retry with the same key after recovery creates exactly one job", async () => {
    const client = suite.h.client(suite.a.apiKey);
    // Warm the console's pools so the cut breaks live connections, not just new ones.
    expect((await client.call("listJobs", {})).status).toBe(200);

    suite.h.dbProxy.cut();
    let outage;
    try {
      outage = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
      const readDuringOutage = await client.call("listJobs", {});
      expect(readDuringOutage.status).toBe(503);
    } finally {
      suite.h.dbProxy.restore();
    }
    expect(outage.status).toBe(503);
    if (outage.ok) throw new Error("expected a problem");
    expect(outage.problem.type).toBe("https://tick.dev/problems/database-unavailable");
    expect(Number(outage.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Nothing was written, and nothing is buffered anywhere to be written later.
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(0);

    const retry = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
    expect(retry.status).toBe(201);
    const again = await client.call("createJob", { body: jobBody(), idempotencyKey: "during-outage" });
    expect(again.status).toBe(200);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "during-outage" } })).toBe(1);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id } })).toBe(1);
  });

  // A failover's other face: the console reaches a server that refuses writes (a standby HAProxy still routes
  // to, a primary Patroni restarts read-only after a crash). Reads work; a create must be a 503, never a 500.
  it("a write refused by a read-only server answers 503 database-unavailable and creates nothing; the retry after promotion creates the job", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const readOnly = async (on: boolean) => {
      await suite.h.prisma.$executeRawUnsafe(`ALTER DATABASE "${suite.h.db.name}" ${on ? "SET default_transaction_read_only = on" : "RESET default_transaction_read_only"}`);
      // New sessions only: reset the console's connections so it reconnects to the "other" server.
      suite.h.dbProxy.cut();
      suite.h.dbProxy.restore();
      await waitFor(async () => (await client.call("listJobs", {})).status === 200, { description: "reads answered again" });
    };
    await readOnly(true);
    let refused;
    try {
      refused = await client.call("createJob", { body: jobBody(), idempotencyKey: "read-only-server" });
    } finally {
      await readOnly(false);
    }
    expect(refused.status).toBe(503);
    if (refused.ok) throw new Error("expected a problem");
    expect(refused.problem.type).toBe("https://tick.dev/problems/database-unavailable");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "read-only-server" } })).toBe(0);
    const retry = await client.call("createJob", { body: jobBody(), idempotencyKey: "read-only-server" });
    expect(retry.status).toBe(201);
  });

  it("readiness reports the database down and back", async () => {
    suite.h.dbProxy.cut();
    try {
      const res = await fetch(`${suite.h.baseUrl}/readyz`);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { failed: unknown }).failed).toHaveProperty("database");
    } finally {
      suite.h.dbProxy.restore();
    }
    expect((await fetch(`${suite.h.baseUrl}/readyz`)).status).toBe(200);
  });
});

/**
 * The connection breaks while `call`'s transaction is committing: Postgres commits, the console never
 * hears. The answer must be 503 outcome-unknown (never "nothing was changed"), the change must be there,
 * and repeating the request must be answered as a repeat.
 */
async function duringCommitCut(h: ConsoleHarness, call: () => Promise<ApiResult<RouteName>>): Promise<ApiResult<RouteName>> {
  const sprung = h.dbProxy.cutAfterRequest((chunk) => chunk.includes("COMMIT"));
  const res = await call();
  await sprung;
  expect(res.status).toBe(503);
  if (res.ok) throw new Error("expected a problem");
  expect(res.problem.type).toBe("https://tick.dev/problems/outcome-unknown");
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  return res;
}

describe("connection lost during COMMIT: every write answers outcome-unknown, and a repeat answers as one", () => {
  const audits = (action: string, targetId?: string) => suite.h.prisma.auditLog.count({ where: { tenantId: suite.a.id, action, ...(targetId ? { targetId } : {}) } });

  it("create: the job exists; the retry with the same Idempotency-Key is the replay (200)", async () => {
    const client = suite.h.client(suite.a.apiKey);
    await duringCommitCut(suite.h, () => client.call("createJob", { body: jobBody(), idempotencyKey: "cut-during-commit" }));
    expect(await suite.h.prisma.job.count({ where: { tenantId: suite.a.id, idempotencyKey: "cut-during-commit" } })).toBe(1);
    const retry = await client.call("createJob", { body: jobBody(), idempotencyKey: "cut-during-commit" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
  });

  it("cancel: the job is cancelled; the retry is 200 repeated (not 409 'already finished')", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    const lost = await duringCommitCut(suite.h, () => client.call("cancelJob", { params: { id: created.body.id } }));
    expect(!lost.ok && lost.problem.detail).toMatch(/may or may not/);
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: created.body.id } })).status).toBe("cancelled");
    const retry = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(retry.status).toBe(200);
    expect(retry.ok && retry.body).toMatchObject({ outcome: "cancelled", repeated: true, attemptsStarted: 0 });
    expect(await audits("job.cancelled", created.body.id)).toBe(1);
  });

  it("queue pause and resume: the change is made and audited once; the retries answer 200 with the same state", async () => {
    const client = suite.h.client(suite.a.apiKey);
    await duringCommitCut(suite.h, () => client.call("pauseQueue", { params: { name: "default" } }));
    expect((await suite.h.prisma.queue.findFirstOrThrow({ where: { tenantId: suite.a.id, name: "default" } })).paused).toBe(true);
    const pausedAgain = await client.call("pauseQueue", { params: { name: "default" } });
    expect(pausedAgain.ok && pausedAgain.body.paused).toBe(true);
    await duringCommitCut(suite.h, () => client.call("resumeQueue", { params: { name: "default" } }));
    expect((await suite.h.prisma.queue.findFirstOrThrow({ where: { tenantId: suite.a.id, name: "default" } })).paused).toBe(false);
    const resumedAgain = await client.call("resumeQueue", { params: { name: "default" } });
    expect(resumedAgain.ok && resumedAgain.body.paused).toBe(false);
  });

  it("schedule pause: paused and audited; the retry answers 200 paused", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createSchedule", { body: { name: "cut-commit", cron: "0 3 * * *", timezone: "UTC", job: { target: { url: "https://93.184.216.34/report" } } } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    await duringCommitCut(suite.h, () => client.call("pauseSchedule", { params: { id: created.body.id } }));
    expect((await suite.h.prisma.schedule.findUniqueOrThrow({ where: { id: created.body.id } })).paused).toBe(true);
    expect(await audits("schedule.paused", created.body.id)).toBe(1);
    const retry = await client.call("pauseSchedule", { params: { id: created.body.id } });
    expect(retry.ok && retry.body.paused).toBe(true);
  });

  it("replay pause: paused and audited once; the retry answers 200 paused", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const dead = await client.call("createJob", { body: jobBody() });
    if (!dead.ok) throw new Error(JSON.stringify(dead.problem));
    await suite.h.prisma.job.update({ where: { id: dead.body.id }, data: { status: "dead", attemptCount: 1, finishedAt: new Date() } });
    const replay = await client.call("createDlqReplay", { body: { jobIds: [dead.body.id] } });
    if (!replay.ok) throw new Error(JSON.stringify(replay.problem));
    const id = (replay.body as { id: string }).id;
    await duringCommitCut(suite.h, () => client.call("pauseDlqReplay", { params: { id } }));
    expect((await suite.h.prisma.dlqReplay.findUniqueOrThrow({ where: { id } })).status).toBe("paused");
    const retry = await client.call("pauseDlqReplay", { params: { id } });
    expect(retry.ok && retry.body.status).toBe("paused");
    expect(await audits("dlq.replay.paused", id)).toBe(1);
    await client.call("cancelDlqReplay", { params: { id } });
  });

  it("key revoke: revoked and audited once; the retry answers 200 with the revoked key", async () => {
    const { keyId } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    const client = suite.h.client(suite.a.apiKey);
    await duringCommitCut(suite.h, () => client.call("revokeApiKey", { params: { id: keyId } }));
    expect((await suite.h.prisma.apiKey.findUniqueOrThrow({ where: { id: keyId } })).revokedAt).not.toBeNull();
    const retry = await client.call("revokeApiKey", { params: { id: keyId } });
    expect(retry.ok && retry.body.revokedAt).not.toBeNull();
    expect(await audits("api_key.revoked", keyId)).toBe(1);
  });

  it("a cut before COMMIT still answers database-unavailable, and nothing changed", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const created = await client.call("createJob", { body: jobBody() });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    suite.h.dbProxy.cut();
    let res;
    try {
      res = await client.call("cancelJob", { params: { id: created.body.id } });
    } finally {
      suite.h.dbProxy.restore();
    }
    expect(res.status).toBe(503);
    expect(!res.ok && res.problem.type).toBe("https://tick.dev/problems/database-unavailable");
    expect((await suite.h.prisma.job.findUniqueOrThrow({ where: { id: created.body.id } })).status).toBe("scheduled");
  });
});

itConformsToOpenApi(suite);
