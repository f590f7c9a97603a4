import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { startSink } from "@tick/testing";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

const statusOf = async (id: string) => {
  const j = await client.call("getJob", { params: { id } });
  return j.ok ? j.body.status : "?";
};

test("flow keys: a job waits with 2 of 2 in flight for its key and links them; the queue page pauses, overrides and resets a key", async ({ page }) => {
  test.setTimeout(150_000);
  // The target holds every request until the test lets go: two of the key's jobs stay in flight.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const sink = await startSink({ respond: () => ({ status: 200, hold: held }) });
  const queue = `e2e-keys-${Date.now().toString(36)}`;
  try {
    const created = await client.call("createQueue", { body: { name: queue, perKeyConcurrency: 2 } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await client.call("createJob", { body: { queue, flowKey: "acme", target: { url: `http://127.0.0.1:${sink.port}/acme/${i}`, timeoutMs: 120_000 } } });
      if (!job.ok) throw new Error(JSON.stringify(job.problem));
      ids.push(job.body.id);
    }
    await expect.poll(() => sink.requests.length, { timeout: 20_000 }).toBe(2);
    const waiting = ids.find((id) => !sink.requests.some((r) => r.path.endsWith(`/${ids.indexOf(id)}`)))!;
    const running = ids.filter((id) => id !== waiting);

    await signIn(page, state.email, state.password);
    await page.goto(`/jobs/${waiting}`);
    const reason = page.getByTestId("job-waiting");
    await expect(reason).toContainText("2 of 2 in flight", { timeout: 15_000 });
    await expect(reason).toHaveAttribute("data-code", "key_at_cap");
    await expect(page.getByTestId("job-flow-key")).toHaveText("acme");
    const links = reason.getByTestId("waiting-in-flight-job");
    await expect(links).toHaveCount(2);
    expect((await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")))).sort()).toEqual(running.map((id) => `/jobs/${id}`).sort());
    await checkPageAtWidths(page, "job-waiting-key-cap", async () => {
      await expect(reason).toBeVisible();
    });

    // The queue page: the key with its figures, then pause, override and reset from its row.
    await page.goto("/queues");
    const card = page.locator(`[data-testid="queue-card"][data-queue="${queue}"]`);
    await expect(card.getByTestId("queue-key-limits")).toContainText("at most 2 in flight");
    await card.getByTestId("show-keys").click();
    const row = card.locator('[data-testid="flow-key-row"][data-key="acme"]');
    await expect(row.getByTestId("flow-key-figures")).toContainText("1 due · 2 of 2 in flight", { timeout: 15_000 });
    await expect(card.getByTestId("flow-key-totals")).toContainText("1 held at their cap");
    await checkPageAtWidths(page, "queue-flow-keys", async () => {
      await expect(row).toBeVisible();
    });

    await row.getByTestId("pause-key").click();
    await expect(row).toContainText("paused");
    const paused = await client.call("getFlowKey", { params: { name: queue, key: "acme" } });
    expect(paused.ok && paused.body.paused).toBe(true);
    await expect.poll(async () => {
      const j = await client.call("getJob", { params: { id: waiting } });
      return j.ok ? j.body.waiting?.code : "?";
    }).toBe("key_paused");

    await row.getByTestId("override-key").click();
    await row.getByTestId("key-concurrency").fill("5");
    await row.getByTestId("save-key").click();
    await expect(row.getByTestId("key-overridden")).toBeVisible();
    await expect(row.getByTestId("flow-key-figures")).toContainText("of 5 in flight");

    await row.getByTestId("reset-key").click();
    await expect(row.getByTestId("key-overridden")).toHaveCount(0);
    await expect(row.getByTestId("flow-key-figures")).toContainText("2 of 2 in flight");
    const reset = await client.call("getFlowKey", { params: { name: queue, key: "acme" } });
    expect(reset.ok && reset.body.override === null && !reset.body.paused).toBe(true);

    // Released, the two finish and the third takes a freed slot: nothing was lost.
    release();
    for (const id of ids) await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe("succeeded");
  } finally {
    release();
    await sink.close();
  }
});
