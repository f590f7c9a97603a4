import { expect, test } from "@playwright/test";
import { startSink } from "@tick/testing";
import { createTickClient } from "@tick/client";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("after a small workload the overview charts are drawn from the scheduler's rollups, for 1 h, 24 h and 7 d", async ({ page }) => {
  test.setTimeout(120_000);
  const server = await startSink({ respond: (req) => ({ status: req.url.includes("fail") ? 500 : 200 }) });
  const base = server.url("");
  try {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await client.call("createJob", { body: { target: { url: `${base}/${i < 6 ? "ok" : "fail"}/${i}` }, maxAttempts: 1 } });
      if (!res.ok) throw new Error(JSON.stringify(res.problem));
      ids.push(res.body.id);
    }
    await expect.poll(async () => {
      const done = await Promise.all(ids.map(async (id) => { const j = await client.call("getJob", { params: { id } }); return j.ok && ["succeeded", "dead"].includes(j.body.status); }));
      return done.every(Boolean);
    }, { timeout: 30_000 }).toBe(true);

    // A dependency that keeps failing: its 20th failure in the breaker's window (BREAKER_MIN_REQUESTS, 50%) opens its breaker.
    const dependencyKey = `e2e-down-${Date.now()}`;
    const failing: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await client.call("createJob", { body: { target: { url: `${base}/fail/dep/${i}` }, maxAttempts: 1, dependencyKey } });
      if (!res.ok) throw new Error(JSON.stringify(res.problem));
      failing.push(res.body.id);
    }
    await expect.poll(async () => {
      const s = await client.call("getStats", { query: { window: "1h" } });
      return s.ok ? (s.body.breakerOpenings.find((d) => d.key === dependencyKey)?.points.reduce((n, p) => n + p.openings, 0) ?? 0) : -1;
    }, { timeout: 60_000 }).toBe(1);
    // None should be left held by the open breaker; if any is, it must not linger into the next specs.
    for (const id of failing) await client.call("cancelJob", { params: { id } });

    // The API says so first (the rollup lags finishes by a few seconds).
    await expect.poll(async () => {
      const s = await client.call("getStats", { query: { window: "1h" } });
      return s.ok ? s.body.bins.reduce((n, b) => n + b.succeeded + b.dead, 0) : -1;
    }, { timeout: 60_000 }).toBeGreaterThanOrEqual(28);

    await signIn(page, state.email, state.password);
    const finished = page.getByTestId("chart-finished");
    await expect(finished).toHaveAttribute("data-has-data", "true");
    await expect(page.getByTestId("chart-lag")).toHaveAttribute("data-has-data", "true");
    await expect(page.getByTestId("chart-breakers")).toHaveAttribute("data-has-data", "true");
    await expect(page.getByTestId("chart-breakers")).toContainText(dependencyKey);
    await expect(finished.locator("canvas")).toBeVisible();
    await finished.getByText("Show as a table").click();
    await expect(finished.getByTestId("chart-table")).toBeVisible();
    await checkPageAtWidths(page, "overview", async () => {
      await expect(finished.locator("canvas")).toBeVisible();
    });
    for (const w of ["24 hours", "7 days"]) {
      await page.getByText(w, { exact: true }).click();
      await expect(finished).toHaveAttribute("data-has-data", "true");
    }
    await page.screenshot({ path: "test-results/overview-7d-1280.png", fullPage: true });
  } finally {
    await server.close();
  }
});
