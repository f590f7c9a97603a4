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

const waitingCodeOf = async (id: string) => {
  const j = await client.call("getJob", { params: { id } });
  return j.ok ? (j.body.waiting?.code ?? null) : "?";
};

test("flow keys: per-key limits set on the queue page; a job waits with 2 of 2 in flight for its key and links them; pause, override and reset a key", async ({ page }) => {
  test.setTimeout(180_000);
  // The target holds every request until the test lets go: the key's first two jobs stay in flight.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const sink = await startSink({ respond: () => ({ status: 200, hold: held }) });
  const queue = `e2e-keys-${Date.now().toString(36)}`;
  try {
    const created = await client.call("createQueue", { body: { name: queue } });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    await signIn(page, state.email, state.password);

    // The queue's per-key limits, set in its limits editor and shown back in words; no key has work yet.
    await page.goto("/queues");
    const card = page.locator(`[data-testid="queue-card"][data-queue="${queue}"]`);
    await expect(card.getByTestId("queue-key-limits")).toContainText("no cap on in flight · no rate");
    await card.getByTestId("edit-queue").click();
    await card.getByTestId("per-key-concurrency").fill("2");
    await card.getByTestId("save-queue").click();
    await expect(card.getByTestId("queue-key-limits")).toContainText("at most 2 in flight · no rate");
    const updated = await client.call("getQueue", { params: { name: queue } });
    expect(updated.ok && updated.body.perKeyConcurrency).toBe(2);
    const showKeys = card.getByTestId("show-keys");
    if ((await showKeys.getAttribute("aria-expanded")) !== "true") await showKeys.click();
    await expect(card.getByTestId("flow-keys").getByTestId("empty")).toContainText("No flow keys with work");

    // Three jobs of key "acme": two run (held at the target), the third waits for a slot.
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await client.call("createJob", { body: { queue, flowKey: "acme", target: { url: `http://127.0.0.1:${sink.port}/acme/${i}`, timeoutMs: 120_000 } } });
      if (!job.ok) throw new Error(JSON.stringify(job.problem));
      ids.push(job.body.id);
    }
    await expect.poll(() => sink.requests.length, { timeout: 30_000 }).toBe(2);
    const calledPaths = sink.requests.map((r) => r.path);
    const waiting = ids.find((_, i) => !calledPaths.some((p) => p.endsWith(`/acme/${i}`)))!;
    const running = ids.filter((id) => id !== waiting);

    // The waiting job's page: the reason in words with its code, 2 of 2 in flight, and links to those two jobs.
    await page.goto(`/jobs/${waiting}`);
    const reason = page.getByTestId("job-waiting");
    await expect(reason).toHaveAttribute("data-code", "key_at_cap", { timeout: 15_000 });
    await expect(reason).toContainText('Waiting: Its flow key "acme" is at its concurrency (2 of 2 in flight).');
    await expect(reason.getByTestId("waiting-cap")).toHaveText("2 of 2 in flight");
    await expect(page.getByTestId("job-flow-key")).toHaveText("acme");
    const links = reason.getByTestId("waiting-in-flight-job");
    await expect(links).toHaveCount(2);
    expect((await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")))).sort()).toEqual(running.map((id) => `/jobs/${id}`).sort());
    await checkPageAtWidths(page, "job-waiting-key-cap", async () => {
      await expect(reason).toBeVisible();
    });
    // A link leads to a job holding the slot: it is running, so it has no waiting reason.
    await links.first().click();
    await expect(page).toHaveURL(new RegExp(`/jobs/(${running.join("|")})$`));
    await expect(page.getByTestId("job-flow-key")).toHaveText("acme");
    await expect(page.getByTestId("job-waiting")).toHaveCount(0);

    // The jobs list says the same in one line, on the waiting job's row.
    await page.goto("/jobs");
    const listRow = page.locator(`[data-testid="job-row"][data-job-id="${waiting}"]`);
    await expect(listRow.getByTestId("row-flow-key")).toHaveText("acme");
    await expect(listRow.getByTestId("row-waiting")).toHaveAttribute("data-code", "key_at_cap", { timeout: 15_000 });
    await expect(listRow.getByTestId("row-waiting")).toContainText("2 of 2 in flight");
    await expect(listRow.getByTestId("waiting-in-flight-job")).toHaveCount(2);
    await checkPageAtWidths(page, "jobs-waiting-key-cap", async () => {
      await expect(listRow.getByTestId("row-waiting")).toBeVisible();
    });
    // Filtered by the flow key, the list holds the key's three jobs and nothing else.
    await page.getByTestId("filter-flow-key").fill("acme");
    await expect(page.getByTestId("job-row")).toHaveCount(3);
    expect((await page.getByTestId("job-row").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-job-id")))).sort()).toEqual([...ids].sort());

    // The queue page: the key's figures, the totals and the chart; then pause, override and reset from its row.
    await page.goto("/queues");
    await expect(card.getByTestId("show-keys")).toHaveAttribute("aria-expanded", "true");
    const row = card.locator('[data-testid="flow-key-row"][data-key="acme"]');
    await expect(row.getByTestId("flow-key-figures")).toContainText("1 due · 2 of 2 in flight", { timeout: 15_000 });
    await expect(row.getByTestId("key-at-cap")).toBeVisible();
    await expect(card.getByTestId("flow-key-totals")).toContainText("1 key with work · 1 held at their cap · 0 paused");
    await expect(card.getByTestId("flow-key-chart")).toContainText("acme");
    await card.getByTestId("key-sort-in_flight").click();
    await expect(card.getByTestId("key-sort-in_flight")).toHaveAttribute("aria-pressed", "true");
    await expect(row.getByTestId("flow-key-figures")).toContainText("2 of 2 in flight");
    await checkPageAtWidths(page, "queue-flow-keys", async () => {
      await expect(row).toBeVisible();
    });

    // Pause: the key's job is held by the pause now, and the totals count it.
    await row.getByTestId("pause-key").click();
    await expect(row.getByTestId("resume-key")).toBeVisible();
    await expect(row).toContainText("paused");
    await expect(card.getByTestId("flow-key-totals")).toContainText("1 paused");
    const paused = await client.call("getFlowKey", { params: { name: queue, key: "acme" } });
    expect(paused.ok && paused.body.paused).toBe(true);
    await expect.poll(() => waitingCodeOf(waiting), { timeout: 15_000 }).toBe("key_paused");
    await card.getByTestId("key-filter").selectOption("paused");
    await expect(card.locator('[data-testid="flow-key-row"]')).toHaveCount(1);
    await card.getByTestId("key-filter").selectOption("all");

    // Override: 5 in flight and a weight of 3 for this key alone, shown on its row.
    await row.getByTestId("override-key").click();
    await expect(row.getByTestId("key-concurrency")).toHaveAttribute("placeholder", "queue: 2");
    await row.getByTestId("key-concurrency").fill("5");
    await row.getByTestId("key-weight").fill("3");
    await checkPageAtWidths(page, "queue-flow-key-override", async () => {
      await expect(row.getByRole("form", { name: "Override of key acme" })).toBeVisible();
    });
    await row.getByTestId("save-key").click();
    await expect(row.getByTestId("key-overridden")).toBeVisible();
    await expect(row.getByTestId("flow-key-figures")).toContainText("of 5 in flight");
    await expect(row.getByTestId("flow-key-figures")).toContainText("weight 3");
    await expect(row.getByTestId("flow-key-override")).toContainText("in flight 5 · rate: the queue's · weight 3 · paused");
    const overridden = await client.call("getFlowKey", { params: { name: queue, key: "acme" } });
    expect(overridden.ok && overridden.body.override).toMatchObject({ concurrency: 5, weight: 3, rate: null, paused: true });

    // Reset to the queue's defaults: no override, not paused, 2 of 2 again; the third job waits for a slot.
    await row.getByTestId("reset-key").click();
    await expect(row.getByTestId("key-overridden")).toHaveCount(0);
    await expect(row.getByTestId("pause-key")).toBeVisible();
    await expect(row.getByTestId("flow-key-figures")).toContainText("2 of 2 in flight");
    await expect(row.getByTestId("flow-key-figures")).toContainText("weight 1");
    const reset = await client.call("getFlowKey", { params: { name: queue, key: "acme" } });
    expect(reset.ok && reset.body.override === null && !reset.body.paused).toBe(true);
    await expect.poll(() => waitingCodeOf(waiting), { timeout: 15_000 }).toBe("key_at_cap");

    // Released, the two finish and the third takes a freed slot: nothing was lost.
    release();
    for (const id of ids) await expect.poll(() => statusOf(id), { timeout: 30_000 }).toBe("succeeded");
    expect(sink.requests.length).toBe(3);
  } finally {
    release();
    await sink.close();
  }
});

test("flow keys in the forms: a job made with a flow key and a debounce, a second create folded into it; a schedule's template carries a flow key", async ({ page }) => {
  test.setTimeout(90_000);
  const sink = await startSink();
  const debounceKey = `e2e-debounce-${Date.now().toString(36)}`;
  let jobId: string | undefined;
  let scheduleId: string | undefined;
  try {
    await signIn(page, state.email, state.password);

    // A trailing debounce of 5 minutes: the job waits for its window to close (the test cancels it).
    const fill = async () => {
      await page.goto("/jobs/new");
      await page.getByLabel("Target URL").fill(`http://127.0.0.1:${sink.port}/debounced`);
      await page.getByRole("textbox", { name: /^Flow key/ }).fill("acme-forms");
      await page.getByRole("combobox", { name: /^Debounce/ }).selectOption("trailing");
      await page.getByRole("textbox", { name: /^Debounce key/ }).fill(debounceKey);
      await page.getByLabel("Window (seconds)").fill("300");
    };
    await fill();
    await checkPageAtWidths(page, "job-new-flow-key", async () => {
      await expect(page.getByRole("textbox", { name: /^Debounce key/ })).toBeVisible();
    });
    await page.getByTestId("create-job").click();
    await expect(page).toHaveURL(/\/jobs\/[0-9a-f-]{36}$/);
    jobId = page.url().split("/").at(-1)!;
    await expect(page.getByTestId("job-flow-key")).toHaveText("acme-forms");
    await expect(page.getByTestId("job-debounce-key")).toHaveText(debounceKey);
    await expect(page.getByTestId("job-waiting")).toHaveAttribute("data-code", "not_due");

    // The same debounce key again: no second job, the form lands on the first and says why.
    await fill();
    await page.getByTestId("create-job").click();
    await expect(page).toHaveURL(new RegExp(`/jobs/${jobId}\\?debounced=1$`));
    await expect(page.getByTestId("debounced-into")).toContainText("folded into this job by its debounce window");
    await expect(page.getByTestId("job-id")).toHaveText(jobId);

    // A schedule whose every occurrence carries a flow key (paused: it never fires here).
    await page.goto("/schedules/new");
    await page.getByLabel("Name").fill(`e2e-keyed-${Date.now().toString(36)}`);
    await page.getByLabel("Target URL").fill(`http://127.0.0.1:${sink.port}/scheduled`);
    await page.getByTestId("schedule-flow-key").fill("acme-nightly");
    await page.getByTestId("save-schedule").click();
    await expect(page).toHaveURL(/\/schedules\/[0-9a-f-]{36}$/);
    scheduleId = page.url().split("/").at(-1)!;
    await expect(page.getByTestId("schedule-flow-key-value")).toHaveText("acme-nightly");
    const schedule = await client.call("getSchedule", { params: { id: scheduleId } });
    expect(schedule.ok && (schedule.body.job as { flowKey?: string }).flowKey).toBe("acme-nightly");
  } finally {
    if (jobId) await client.call("cancelJob", { params: { id: jobId } });
    if (scheduleId) await client.call("deleteSchedule", { params: { id: scheduleId } });
    await sink.close();
  }
});
