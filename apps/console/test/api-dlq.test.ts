import { describe, expect, it } from "vitest";
import { itConformsToOpenApi, jobBody, useConsole } from "./harness";

const suite = useConsole();

/** Dead-letters a job as the worker would after its last attempt. */
async function kill(id: string, error: Record<string, unknown>, finishedAgoMs: number) {
  const p = suite.h.prisma;
  const job = await p.job.findUniqueOrThrow({ where: { id } });
  await p.attempt.create({
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- false positive: tsc rejects this value for Prisma's Json input type without the cast
    data: { jobId: id, tenantId: job.tenantId, number: 1, fencingToken: 1n, jobVersion: 2, shardEpoch: 1n, status: "failed", outcome: String(error.kind), httpStatus: (error.status as number) ?? null, error: error as object, startedAt: new Date(), finishedAt: new Date() },
  });
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- false positive: tsc rejects this value for Prisma's Json input type without the cast
  await p.job.update({ where: { id }, data: { status: "dead", version: 4, attemptCount: 1, lastError: error as object, finishedAt: new Date(Date.now() - finishedAgoMs) } });
}

describe("DLQ API", () => {
  it("lists dead jobs newest first with their last error and attempts, filtered and paged, for dlq:read only", async () => {
    const client = suite.h.client(suite.a.apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await client.call("createJob", { body: jobBody({ metadata: { i } }) });
      if (!res.ok) throw new Error("create failed");
      ids.push(res.body.id);
    }
    await kill(ids[0]!, { kind: "retryable", status: 503, message: "HTTP 503" }, 3_000);
    await kill(ids[1]!, { kind: "non_retryable", status: 400, message: "HTTP 400" }, 2_000);
    await kill(ids[2]!, { kind: "timeout", status: null, message: "timed out" }, 1_000);

    const all = await client.call("listDeadJobs", {});
    if (!all.ok) throw new Error(JSON.stringify(all.problem));
    expect(all.body.data.map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(all.body.data[1]!.lastError).toMatchObject({ kind: "non_retryable", status: 400 });
    expect(all.body.data[1]!.attempts.map((a) => [a.status, a.httpStatus])).toEqual([["failed", 400]]);

    const by = async (query: Record<string, string | number>) => {
      const res = await client.call("listDeadJobs", { query });
      if (!res.ok) throw new Error(JSON.stringify(res.problem));
      return res.body.data.map((j) => j.id);
    };
    expect(await by({ errorKind: "timeout" })).toEqual([ids[2]]);
    expect(await by({ httpStatus: 503 })).toEqual([ids[0]]);
    expect(await by({ dependency: "93.184.216.34" })).toHaveLength(3);
    expect(await by({ queue: "nope" })).toEqual([]);

    const page1 = await client.call("listDeadJobs", { query: { limit: 2 } });
    if (!page1.ok || !page1.body.nextCursor) throw new Error("expected two pages");
    const page2 = await client.call("listDeadJobs", { query: { limit: 2, cursor: page1.body.nextCursor } });
    if (!page2.ok) throw new Error("page 2 failed");
    expect([...page1.body.data, ...page2.body.data].map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);

    const b = await suite.h.createTenant();
    const other = await suite.h.client(b.apiKey).call("listDeadJobs", {});
    if (!other.ok) throw new Error("list failed");
    expect(other.body.data).toEqual([]);
    const { apiKey } = await suite.h.addKey(suite.a.id, ["jobs:read"]);
    expect((await suite.h.client(apiKey).call("listDeadJobs", {})).status).toBe(403);
  });
});

itConformsToOpenApi(suite);
