import { expect, test } from "@playwright/test";
import { startSink } from "@tick/testing";
import { createTickClient } from "@tick/client";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("a job created through the API is dispatched, executed against its endpoint once, and reported back by webhook", async () => {
  const server = await startSink();
  const seen = server.requests;
  const port = server.port;
  try {
    const created = await client.call("createJob", {
      body: { target: { url: `http://127.0.0.1:${port}/work`, body: '{"hello":"world"}' }, callbackUrl: `http://127.0.0.1:${port}/done` },
      idempotencyKey: `lifecycle-${Date.now()}`,
    });
    expect(created.status).toBe(201);
    if (!created.ok) throw new Error(JSON.stringify(created.problem));

    await expect
      .poll(async () => {
        const job = await client.call("getJob", { params: { id: created.body.id } });
        return job.ok ? job.body.status : "unknown";
      }, { timeout: 20_000 })
      .toBe("succeeded");
    await expect.poll(() => seen.filter((s) => s.path === "/done").length, { timeout: 20_000 }).toBe(1);

    const work = seen.filter((s) => s.path === "/work");
    expect(work).toHaveLength(1);
    expect(work[0]!.headers["idempotency-key"]).toBe(created.body.idempotencyKey);
    expect(work[0]!.body).toBe('{"hello":"world"}');
    const done = seen.find((s) => s.path === "/done")!;
    expect(done.headers["webhook-signature"]).toMatch(/^v1,/);
    expect(JSON.parse(done.body)).toMatchObject({ type: "job.succeeded", data: { jobId: created.body.id } });

    const job = await client.call("getJob", { params: { id: created.body.id } });
    if (!job.ok) throw new Error("get failed");
    expect(job.body.attempts.map((a) => a.status)).toEqual(["succeeded"]);
  } finally {
    await server.close();
  }
});

test("cancel between retries says earlier attempts ran: the target acted once (answered 500), then the cancel is cancelled_after_attempts, and a repeat answers the same", async () => {
  let hits = 0;
  const server = await startSink({
    respond: () => {
      hits += 1;
      return { status: 500, body: "the target acted, then failed" };
    },
  });
  const port = server.port;
  try {
    const created = await client.call("createJob", {
      body: { target: { url: `http://127.0.0.1:${port}/charge` }, maxAttempts: 3, backoff: { strategy: "fixed", baseMs: 600_000, maxMs: 600_000, jitter: "none" } },
      idempotencyKey: `cancel-between-retries-${Date.now()}`,
    });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    // Attempt 1 reached the target and failed; the job waits ten minutes for its retry.
    await expect
      .poll(async () => {
        const job = await client.call("getJob", { params: { id: created.body.id } });
        return job.ok ? `${job.body.status}/${job.body.attemptCount}` : "unknown";
      }, { timeout: 20_000 })
      .toBe("scheduled/1");
    expect(hits).toBe(1);

    const cancelled = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(cancelled.status).toBe(200);
    if (!cancelled.ok) throw new Error(JSON.stringify(cancelled.problem));
    expect(cancelled.body).toMatchObject({ outcome: "cancelled_after_attempts", attemptsStarted: 1, repeated: false, job: { status: "cancelled" } });

    const again = await client.call("cancelJob", { params: { id: created.body.id } });
    expect(again.status).toBe(200);
    if (!again.ok) throw new Error(JSON.stringify(again.problem));
    expect(again.body).toMatchObject({ outcome: "cancelled_after_attempts", attemptsStarted: 1, repeated: true });
    expect(hits).toBe(1);
  } finally {
    await server.close();
  }
});
