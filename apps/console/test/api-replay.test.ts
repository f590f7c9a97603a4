import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole, type ConsoleHarness, type TestTenant } from "./harness";

const suite = useConsole();

/** Creates `n` jobs through the API and dead-letters them as the worker would after the last attempt. */
async function deadJobs(h: ConsoleHarness, t: TestTenant, n: number, options: { priority?: number; status?: number } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await h.client(t.apiKey).call("createJob", { body: jobBody({ priority: options.priority ?? 0 }) });
    if (!res.ok) throw new Error(JSON.stringify(res.problem));
    ids.push(res.body.id);
  }
  const status = options.status ?? 503;
  await h.prisma.job.updateMany({
    where: { id: { in: ids } },
    data: { status: "dead", attemptCount: 1, lastError: { kind: status >= 500 ? "retryable" : "non_retryable", status }, finishedAt: new Date() },
  });
  return ids;
}

const auditOf = async (h: ConsoleHarness, t: TestTenant, targetId: string) => {
  const res = await h.client(t.apiKey).call("listAuditLog", { query: { targetId } });
  if (!res.ok) throw new Error(JSON.stringify(res.problem));
  return res.body.data.map((e) => ({ action: e.action, actorType: e.actorType, actorId: e.actorId })).reverse();
};

describe("DLQ replay API", () => {
  it("a dry run counts and samples in release order and changes nothing", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    await deadJobs(h, t, 3, { status: 503 });
    const urgent = await deadJobs(h, t, 2, { priority: 7, status: 503 });
    await deadJobs(h, t, 4, { status: 400 });
    const res = await h.client(t.apiKey).call("createDlqReplay", { body: { filter: { httpStatus: 503 }, dryRun: true, ratePerSecond: 5 } });
    if (!res.ok) throw new Error(JSON.stringify(res.problem));
    expect(res.status).toBe(200);
    const body = res.body as { dryRun: true; count: number; wouldTake: number; sample: { id: string }[]; estimatedSeconds: number };
    expect(body).toMatchObject({ dryRun: true, count: 5, wouldTake: 5, estimatedSeconds: 1 });
    expect(body.sample.slice(0, 2).map((j) => j.id).sort()).toEqual([...urgent].sort());
    expect(await h.prisma.dlqReplay.count({ where: { tenantId: t.id } })).toBe(0);
    expect(await h.prisma.job.count({ where: { tenantId: t.id, status: "dead" } })).toBe(9);
    const log = await h.client(t.apiKey).call("listAuditLog", { query: { action: "dlq.replay.dry_run" } });
    expect(log.ok && log.body.data[0]?.details).toMatchObject({ filter: { httpStatus: 503 }, count: 5 });
  });

  it("creates a replay with its record, then pause, resume and cancel, each audited with the actor; repeats are 200, wrong-state actions are 409", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    const ids = await deadJobs(h, t, 4);
    const client = h.client(t.apiKey);
    const created = await client.call("createDlqReplay", { body: { jobIds: ids.slice(0, 3), ratePerSecond: 2, failureThreshold: 0.25, attempts: 3 } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    expect(created.status).toBe(201);
    const replay = created.body as { id: string; status: string; actor: string; filter: unknown; ratePerSecond: number; progress: Record<string, number> };
    expect(replay).toMatchObject({ status: "running", actor: `api_key:${t.keyId}`, filter: { jobIds: ids.slice(0, 3) }, ratePerSecond: 2, failureThreshold: 0.25, attempts: 3 });
    expect(replay.progress).toEqual({ total: 3, released: 0, succeeded: 0, failed: 0, skipped: 0, inFlight: 0, remaining: 3 });

    const paused = await client.call("pauseDlqReplay", { params: { id: replay.id } });
    expect(paused.ok && paused.body.status).toBe("paused");
    // A repeat (the first answer lost) is answered as done, changing nothing and auditing nothing.
    const again = await client.call("pauseDlqReplay", { params: { id: replay.id } });
    expect(again.status).toBe(200);
    expect(again.ok && again.body.status).toBe("paused");
    expect((await client.call("resumeDlqReplay", { params: { id: replay.id } })).ok).toBe(true);
    const cancelled = await client.call("cancelDlqReplay", { params: { id: replay.id } });
    if (!cancelled.ok) throw new Error(JSON.stringify(cancelled.problem));
    expect(cancelled.body).toMatchObject({ status: "cancelled", progress: { total: 3, skipped: 3, remaining: 0 } });
    expect(cancelled.body.finishedAt).not.toBeNull();
    expect((await client.call("resumeDlqReplay", { params: { id: replay.id } })).status).toBe(409);

    const got = await client.call("getDlqReplay", { params: { id: replay.id } });
    expect(got.ok && got.body.status).toBe("cancelled");
    const list = await client.call("listDlqReplays", {});
    expect(list.ok && list.body.data.map((r) => r.id)).toEqual([replay.id]);

    const actor = { actorType: "api_key", actorId: t.keyId };
    expect(await auditOf(h, t, replay.id)).toEqual([
      { action: "dlq.replay.created", ...actor },
      { action: "dlq.replay.paused", ...actor },
      { action: "dlq.replay.resumed", ...actor },
      { action: "dlq.replay.cancelled", ...actor },
    ]);
    // The cancelled replay's jobs are dead again and free: another replay takes them.
    const next = await client.call("createDlqReplay", { body: { filter: { queue: "default" } } });
    expect(next.ok && (next.body as { progress: { total: number } }).progress.total).toBe(4);
    // The filter as it was asked for, not nested in another "filter".
    expect(next.ok && (next.body as { filter: unknown }).filter).toEqual({ queue: "default" });
  });

  it("refuses what it cannot do, clearly", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    const client = h.client(t.apiKey);
    const nothing = await client.call("createDlqReplay", { body: { filter: { queue: "default" } } });
    expect(nothing.status).toBe(422);
    expect(!nothing.ok && nothing.problem.type).toBe("https://tick.dev/problems/nothing-to-replay");
    for (const body of [{}, { filter: {}, ratePerSecond: 0 }, { filter: {}, ratePerSecond: 5_000 }, { filter: {}, failureThreshold: 2 }, { filter: { bogus: 1 } }, { jobIds: ["not-a-uuid"] }, { filter: {}, attempts: 0 }]) {
      const res = await client.call("createDlqReplay", { body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await client.call("getDlqReplay", { params: { id: crypto.randomUUID() } })).status).toBe(404);
    expect((await client.call("pauseDlqReplay", { params: { id: "nope" } })).status).toBe(404);
  });

  it("needs dlq:replay to replay and dlq:read to watch; another tenant's replay is not found", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    await deadJobs(h, t, 2);
    const created = await h.client(t.apiKey).call("createDlqReplay", { body: { filter: {} } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    const id = (created.body as { id: string }).id;

    const reader = h.client((await h.addKey(t.id, ["dlq:read"])).apiKey);
    const denied = await reader.call("createDlqReplay", { body: { filter: {}, dryRun: true } });
    expect(denied.status).toBe(403);
    expect(!denied.ok && denied.problem.detail).toContain("dlq:replay");
    expect((await reader.call("pauseDlqReplay", { params: { id } })).status).toBe(403);
    expect((await reader.call("getDlqReplay", { params: { id } })).status).toBe(200);
    const writerOnly = h.client((await h.addKey(t.id, ["jobs:write"])).apiKey);
    expect((await writerOnly.call("listDlqReplays", {})).status).toBe(403);

    const other = await h.createTenant();
    expect((await h.client(other.apiKey).call("getDlqReplay", { params: { id } })).status).toBe(404);
    expect((await h.client(other.apiKey).call("cancelDlqReplay", { params: { id } })).status).toBe(404);
  });

  it("console users act by role: a viewer gets 403, an operator replays (audited as the user); writes from another origin are refused", async () => {
    const { h } = suite;
    const t = await h.createTenant();
    await deadJobs(h, t, 2);
    const viewer = await h.addUser(t.id, "viewer");
    const operator = await h.addUser(t.id, "operator");

    const asViewer = h.sessionClient(await h.signIn(viewer.email, viewer.password));
    const refused = await asViewer.call("createDlqReplay", { body: { filter: {} } });
    expect(refused.status).toBe(403);
    expect(!refused.ok && refused.problem.detail).toContain("role");
    expect((await asViewer.call("listDeadJobs", {})).status).toBe(200);

    const operatorCookie = await h.signIn(operator.email, operator.password);
    const foreign = await h.sessionClient(operatorCookie, { origin: "https://evil.example" }).call("createDlqReplay", { body: { filter: {} } });
    expect(foreign.status).toBe(403);
    const created = await h.sessionClient(operatorCookie).call("createDlqReplay", { body: { filter: {} } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    const replay = created.body as { id: string; actor: string };
    expect(replay.actor).toBe(`user:${operator.id}`);
    expect(await auditOf(h, t, replay.id)).toEqual([{ action: "dlq.replay.created", actorType: "user", actorId: operator.id }]);
    expect((await asViewer.call("pauseDlqReplay", { params: { id: replay.id } })).status).toBe(403);

    // Without a session or key: 401.
    expect((await h.sessionClient("").call("listDlqReplays", {})).status).toBe(401);
    // A tenant the user is not a member of: 403.
    expect((await h.sessionClient(operatorCookie, { "tick-tenant": suite.a.id }).call("listDlqReplays", {})).status).toBe(403);
  });
});

itConformsToOpenApi(suite);
