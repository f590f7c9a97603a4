import { expect, test } from "@playwright/test";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();

test("operator status page: the shard map with held shards, the scheduler and the worker ready by their own /readyz", async ({ page }) => {
  // The demo login is this local platform's operator (npm start sets TICK_OPERATOR_EMAILS to it).
  await signIn(page, state.email, state.password);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Operator" }).click();
  await page.getByRole("navigation", { name: "Operator" }).getByRole("link", { name: "Status" }).click();
  await expect(page).toHaveURL(/\/operator\/status$/);

  // Every shard is held by the one scheduler: its lease, epoch and expiry are in each cell's label.
  const shards = page.getByTestId("shard");
  await expect(shards.first()).toBeVisible();
  const count = await shards.count();
  expect(count).toBeGreaterThan(0);
  await expect(page.locator('[data-testid="shard"][data-held="true"]')).toHaveCount(count);
  await expect(shards.first()).toHaveAttribute("aria-label", /held by .+, epoch \d+, lease expires in/);
  await expect(page.getByTestId("status-summary")).toContainText(`${count} of ${count}`);
  // Redis is up: every held shard finds its due work through the index, as its holder reports.
  await expect(shards.first()).toHaveAttribute("aria-label", /due work from the Redis index/);
  await expect(page.getByTestId("status-summary")).toContainText("every held shard uses Redis");

  // The scheduler and the worker: heartbeat rows, each answered ready at its own /readyz.
  const scheduler = page.getByTestId("schedulers-list").getByTestId("node");
  const worker = page.getByTestId("workers-list").getByTestId("node");
  await expect(scheduler).toHaveCount(1);
  await expect(worker).toHaveCount(1);
  await expect(scheduler.getByTestId("readiness")).toHaveText("ready (200)");
  await expect(worker.getByTestId("readiness")).toHaveText("ready (200)");
  await expect(scheduler).toContainText(`${count} shards`);
  await expect(scheduler).toContainText("checks passed: database");
  await expect(worker).toContainText("checks passed: database, redis");
  await expect(scheduler).toContainText(/version \d+\.\d+\.\d+/);
  await expect(page.getByTestId("no-open-breakers")).toBeVisible();

  await checkPageAtWidths(page, "operator-status", async () => {
    await expect(page.getByTestId("shard-map")).toBeVisible();
    await expect(worker.getByTestId("readiness")).toHaveText("ready (200)");
  });

  // Live: the heartbeat age is refreshed without a reload (every 3 s).
  const before = await page.getByText(/^As of /).textContent();
  await expect(page.getByText(/^As of /)).not.toHaveText(before ?? "", { timeout: 10_000 });
});
