import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("a job created through the API is dispatched, executed against its endpoint once, and reported back by webhook", async () => {
  const seen: { path: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ path: req.url ?? "", headers: req.headers, body });
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
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
    server.close();
  }
});
