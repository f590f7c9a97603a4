import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("the typed client creates, replays, reads, lists and cancels a job on the running product", async () => {
  const key = `e2e-${Date.now()}`;
  const body = { target: { url: "http://127.0.0.1:9/never-called", method: "POST" as const }, delayMs: 3_600_000, metadata: { from: "e2e" } };
  const created = await client.call("createJob", { body, idempotencyKey: key });
  expect(created.status).toBe(201);
  if (!created.ok) throw new Error(JSON.stringify(created.problem));
  expect(created.body.status).toBe("scheduled");

  const replay = await client.call("createJob", { body, idempotencyKey: key });
  expect(replay.status).toBe(200);
  if (!replay.ok) throw new Error("replay failed");
  expect(replay.body.id).toBe(created.body.id);

  const fetched = await client.call("getJob", { params: { id: created.body.id } });
  if (!fetched.ok) throw new Error("get failed");
  expect(fetched.body.attempts).toEqual([]);
  expect(fetched.body.metadata).toEqual({ from: "e2e" });

  const list = await client.call("listJobs", { query: { limit: 10 } });
  if (!list.ok) throw new Error("list failed");
  expect(list.body.data.map((j) => j.id)).toContain(created.body.id);

  const cancelled = await client.call("cancelJob", { params: { id: created.body.id } });
  expect(cancelled.status).toBe(200);
  if (!cancelled.ok) throw new Error("cancel failed");
  expect(cancelled.body.outcome).toBe("cancelled");
});

test("the product refuses SSRF targets even with the demo's loopback exception", async () => {
  const res = await client.call("createJob", { body: { target: { url: "http://169.254.169.254/latest/meta-data" } } });
  expect(res.status).toBe(422);
  if (res.ok) throw new Error("expected a problem");
  expect(res.problem.type).toBe("https://tick.dev/problems/target-not-allowed");
});
