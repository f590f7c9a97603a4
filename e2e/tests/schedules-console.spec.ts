import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("schedules in the console: the rule in words, a DST preview that marks moved, skipped and doubled times, create, pause, delete", async ({ page }) => {
  // Many steps and two pages checked at two widths (axe, screenshots): 25-31 s on this 2-core machine, past the
  // default 30 s in one CI run (at its last screenshot), as the queues and overview tests are.
  test.setTimeout(90_000);
  await signIn(page, state.email, state.password);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Schedules" }).click();
  await expect(page.getByRole("heading", { name: "Schedules" })).toBeVisible();
  await page.getByRole("link", { name: "New schedule" }).click();

  await page.getByTestId("cron-input").fill("30 2 * * *");
  await expect(page.getByTestId("cron-description")).toHaveText("At 02:30");
  await page.getByTestId("zone-input").fill("America/New_York");
  // Spring forward in New York: 02:30 does not exist on 8 March 2026; shifted by default, to 03:00 (-04:00).
  await page.getByTestId("preview-from").fill("2026-03-06");
  const rows = page.getByTestId("preview-row");
  const moved = rows.filter({ has: page.locator('[data-testid="dst-note"]') }).first();
  await expect(moved).toHaveAttribute("data-dst", "gap_shifted");
  await expect(moved).toContainText("2026-03-08 03:00");
  await expect(moved).toContainText("Moved: 02:30 does not exist that day; fires at 03:00");
  await expect(moved).toContainText("2026-03-08 07:00 UTC");
  // With the skip policy the same night shows as not firing.
  await page.getByRole("radio", { name: /^skip: A time that does not exist/ }).check();
  await expect(rows.filter({ hasText: "2026-03-08" })).toHaveAttribute("data-dst", "gap_skipped");
  await expect(rows.filter({ hasText: "2026-03-08" })).toContainText("does not fire");
  // Fall back: with "both", 01:30 on 1 November fires twice, an hour apart (EDT, then EST).
  await page.getByTestId("cron-input").fill("30 1 * * *");
  await page.getByRole("radio", { name: /^both:/ }).check();
  await page.getByTestId("preview-from").fill("2026-10-31");
  const doubled = rows.filter({ hasText: "2026-11-01 01:30" });
  await expect(doubled).toHaveCount(2);
  await expect(doubled.nth(0)).toContainText("Doubled: first of the two");
  await expect(doubled.nth(0)).toContainText("-04:00");
  await expect(doubled.nth(1)).toContainText("-05:00");
  await page.screenshot({ path: "test-results/schedule-dst-preview-1280.png", fullPage: true });

  // A bad rule is refused at its field; then a valid one is created.
  const name = `e2e-nightly-${Date.now()}`;
  await page.getByLabel("Name").fill(name);
  await page.getByLabel("Target URL").fill("http://127.0.0.1:9/report"); // paused and deleted before it could fire
  await page.getByTestId("zone-input").fill("Mars/Olympus");
  await expect(page.getByTestId("preview-error")).toContainText("not a known IANA zone");
  await page.getByTestId("save-schedule").click();
  await expect(page.getByTestId("error-err-timezone")).toContainText("not a known IANA zone");
  await checkPageAtWidths(page, "schedule-new", async () => {
    await expect(page.getByTestId("error-err-timezone")).toBeVisible();
  });
  await page.getByTestId("zone-input").fill("America/New_York");
  await page.getByTestId("save-schedule").click();
  await expect(page).toHaveURL(/\/schedules\/[0-9a-f-]{36}$/);
  await expect(page.getByRole("heading", { name })).toBeVisible();
  await expect(page.getByTestId("last-fire")).toHaveText("never fired");
  await expect(page.getByTestId("preview-row").first()).toBeVisible();
  await checkPageAtWidths(page, "schedule-detail", async () => {
    await expect(page.getByTestId("preview-row").first()).toBeVisible();
  });

  // Paused from the list, then deleted after a confirmation.
  await page.goto("/schedules");
  const row = page.getByTestId("schedule-row").filter({ hasText: name });
  await row.getByTestId("pause-schedule").click();
  await expect(row).toContainText("paused");
  await checkPageAtWidths(page, "schedules-list", async () => {
    await expect(row).toBeVisible();
  });
  await row.getByTestId("delete-schedule").click();
  await row.getByTestId("confirm-delete-schedule").click();
  await expect(page.getByTestId("schedule-row").filter({ hasText: name })).toHaveCount(0);
});

test("a schedule's page lists the occurrences it fired, each linked to the job it became", async ({ page }) => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const created = await client.call("createSchedule", {
    body: { name: `e2e-every-second-${Date.now()}`, cron: "* * * * * *", timezone: "UTC", job: { target: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tick` } } },
  });
  if (!created.ok) throw new Error(JSON.stringify(created.problem));
  try {
    await signIn(page, state.email, state.password);
    await page.goto(`/schedules/${created.body.id}`);
    await expect(page.getByTestId("past-occurrences").getByRole("listitem").first()).toBeVisible({ timeout: 30_000 });
    await expect(page.getByTestId("last-fire")).not.toHaveText("never fired", { timeout: 20_000 });
    await expect(page.getByTestId("past-occurrences")).toContainText("succeeded", { timeout: 20_000 });
    await page.getByTestId("past-occurrences").getByRole("link").first().click();
    await expect(page).toHaveURL(/\/jobs\/[0-9a-f-]{36}$/);
    await expect(page.getByRole("link", { name: /^occurrence of / })).toBeVisible();
  } finally {
    await client.call("deleteSchedule", { params: { id: created.body.id } });
    // Occurrences already materialised must not outlive the sink: cancel what has not run.
    const left = await client.call("listJobs", { query: { scheduleId: created.body.id, status: "scheduled,dispatched" } });
    for (const j of left.ok ? left.body.data : []) await client.call("cancelJob", { params: { id: j.id } });
    await new Promise((r) => setTimeout(r, 500));
    server.close();
  }
});
