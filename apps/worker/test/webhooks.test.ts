import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { inTransaction, sql } from "@tick/db";
import { waitFor, type Sink } from "@tick/testing";
import { type ProcessWorld, useProcessWorld } from "./harness.js";

let w: ProcessWorld;
let sink: Sink;
useProcessWorld((world, s) => {
  w = world;
  sink = s;
});

const webhooksAt = (path: string) => sink.requests.filter((r) => r.path === path);
const secretsOf = async (tenantId: string) =>
  (await w.pool.query<{ secret: string }>(`SELECT secret FROM signing_secrets WHERE tenant_id = $1 ORDER BY created_at`, [tenantId])).rows.map((r) => r.secret);

describe("completion webhooks (Standard Webhooks)", () => {
  it("are signed so an independent verifier accepts them, including across a secret rotation", async () => {
    await w.startScheduler();
    await w.startWorker();
    const t = await w.createTenant();
    const first = await w.createJob(t, sink.url("/work"), { callbackUrl: sink.url("/done") });
    await waitFor(() => webhooksAt("/done").length === 1, { description: "first webhook" });
    const [oldSecret] = await secretsOf(t.id);
    const hook = webhooksAt("/done")[0]!;
    // The call to the job's own target was signed too (attempt ID as the message id).
    const work = webhooksAt("/work")[0]!;
    const workHeaders = { "webhook-id": work.attemptId!, "webhook-timestamp": work.headers["tick-timestamp"] as string, "webhook-signature": work.headers["tick-signature"] as string };
    expect(() => new Webhook(oldSecret!).verify(work.body, workHeaders)).not.toThrow();
    const payload = new Webhook(oldSecret!).verify(hook.body, hook.headers as Record<string, string>) as { type: string; data: { jobId: string; status: string } };
    expect(payload).toMatchObject({ type: "job.succeeded", data: { jobId: first, status: "succeeded" } });
    expect(() => new Webhook(`whsec_${Buffer.from("not the secret, 24 bytes").toString("base64")}`).verify(hook.body, hook.headers as Record<string, string>)).toThrow();

    // Rotate: during the overlap both the old and the new secret verify the next webhook.
    await sql.rotateSigningSecret(w.pool, t.id, `whsec_${Buffer.from("a brand new secret value!").toString("base64")}`, 3_600_000);
    const second = await w.createJob(t, sink.url("/work"), { callbackUrl: sink.url("/done") });
    await waitFor(() => webhooksAt("/done").length === 2, { description: "second webhook" });
    const [, newSecret] = await secretsOf(t.id);
    const hook2 = webhooksAt("/done")[1]!;
    for (const secret of [oldSecret!, newSecret!]) {
      const verified = new Webhook(secret).verify(hook2.body, hook2.headers as Record<string, string>) as { data: { jobId: string } };
      expect(verified.data.jobId).toBe(second);
    }
    // The sink has answered; the worker records the try right after.
    const log = await waitFor(async () => {
      const r = await w.pool.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM webhook_deliveries WHERE tenant_id = $1 ORDER BY created_at`, [t.id]);
      return r.rows.every((row) => row.status !== "pending") ? r : null;
    }, { description: "both deliveries recorded" });
    expect(log.rows).toEqual([
      { status: "delivered", attempts: 1 },
      { status: "delivered", attempts: 1 },
    ]);
  });

  it("retries a failing receiver with the same webhook-id, and a dead job's webhook says so", async () => {
    await w.startScheduler();
    await w.startWorker();
    const t = await w.createTenant();
    let failures = 2;
    sink.respond((req) => (req.path === "/work" ? { status: 400 } : req.path === "/done" && failures-- > 0 ? { status: 500 } : undefined));
    const id = await w.createJob(t, sink.url("/work"), { callbackUrl: sink.url("/done") });
    await waitFor(() => webhooksAt("/done").length === 3, { timeoutMs: 20_000, description: "three delivery tries" });
    const ids = new Set(webhooksAt("/done").map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    const body: unknown = JSON.parse(webhooksAt("/done")[2]!.body);
    expect(body).toMatchObject({ type: "job.dead", data: { jobId: id, status: "dead" } });
    await waitFor(async () => (await w.pool.query<{ status: string }>(`SELECT status FROM webhook_deliveries WHERE job_id = $1`, [id])).rows[0]?.status === "delivered", {
      description: "delivery recorded as delivered",
    });
    const row = (await w.pool.query<{ attempts: number; last_status: number }>(`SELECT attempts, last_status FROM webhook_deliveries WHERE job_id = $1`, [id])).rows[0];
    expect(row).toEqual({ attempts: 3, last_status: 200 });
  });

  it("cancelling a job sends job.cancelled", async () => {
    const t = await w.createTenant();
    const id = await w.createJob(t, sink.url("/never"), { callbackUrl: sink.url("/done") });
    // What the cancel API does: the cancel writes its webhook in the same statement.
    await inTransaction(w.pool, (client) => sql.cancelJobBeforeStart(client, t.id, id));
    await w.startScheduler();
    await w.startWorker();
    await waitFor(() => webhooksAt("/done").length === 1, { description: "cancel webhook" });
    expect(JSON.parse(webhooksAt("/done")[0]!.body)).toMatchObject({ type: "job.cancelled", data: { jobId: id } });
    expect(webhooksAt("/never")).toHaveLength(0);
  });
});
