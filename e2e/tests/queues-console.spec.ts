import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

const statusOf = async (id: string) => {
  const j = await client.call("getJob", { params: { id } });
  return j.ok ? j.body.status : "?";
};

test("queues in the console: pause one and its jobs wait, resume it and they run; set its limits; pause one dependency's jobs", async ({ page }) => {
  test.setTimeout(120_000);
  let calls = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      calls += 1;
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const queue = `e2e-q-${Date.now().toString(36)}`;
  try {
    const created = await client.call("createQueue", { body: { name: queue } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    await signIn(page, state.email, state.password);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Queues" }).click();
    const card = page.locator(`[data-testid="queue-card"][data-queue="${queue}"]`);
    await card.getByTestId("pause-queue").click();
    await expect(card).toContainText("paused");

    // A job due now in the paused queue waits, scheduled, and its target is not called.
    const job = await client.call("createJob", { body: { queue, target: { url: `http://${host}/q` } } });
    if (!job.ok) throw new Error(JSON.stringify(job.problem));
    await expect(card.getByTestId("paused-waiting")).toContainText("1 due job waits here", { timeout: 15_000 });
    await expect(card.getByTestId("stat-due")).toHaveText("1");
    await checkPageAtWidths(page, "queues", async () => {
      await expect(card.getByTestId("paused-waiting")).toBeVisible();
    });
    expect(await statusOf(job.body.id)).toBe("scheduled");
    expect(calls).toBe(0);

    await card.getByTestId("resume-queue").click();
    await expect.poll(() => statusOf(job.body.id), { timeout: 20_000 }).toBe("succeeded");
    expect(calls).toBe(1);

    // Limits: concurrency and rate, shown back as words.
    await card.getByTestId("edit-queue").click();
    await card.getByLabel("Concurrency").fill("5");
    await card.getByLabel("Rate (dispatches per second)").fill("2");
    await card.getByTestId("save-queue").click();
    await expect(card.getByTestId("queue-limits")).toContainText("at most 5 in flight · at most 2/s");

    // One dependency paused: its job waits while the queue runs; resumed, it runs. The job is created first
    // (due in 15 s): a dependency is listed once a live job calls it, and this test must not rely on what
    // other tests left running for theirs.
    const dep = page.locator(`[data-testid="dependency-row"][data-dependency="${host}"]`);
    const held = await client.call("createJob", { body: { queue, target: { url: `http://${host}/held` }, delayMs: 15_000 } });
    if (!held.ok) throw new Error(JSON.stringify(held.problem));
    await expect(dep).toBeVisible({ timeout: 12_000 }); // the page refreshes every 5 s
    await dep.getByTestId("pause-dependency").click();
    await expect(dep).toContainText("paused");
    await expect(dep).toContainText("breaker closed");
    // Past its due time (and a dispatch round or two), the paused dependency's job still waits.
    await page.waitForTimeout(Math.max(0, Date.parse(held.body.dueAt) - Date.now()) + 3_000);
    expect(await statusOf(held.body.id)).toBe("scheduled");
    await dep.getByTestId("resume-dependency").click();
    await expect.poll(() => statusOf(held.body.id), { timeout: 20_000 }).toBe("succeeded");
    expect(calls).toBe(2);
  } finally {
    server.close();
  }
});
