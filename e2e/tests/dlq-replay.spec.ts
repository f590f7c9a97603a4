import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { checkPageAtWidths } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

test("an operator dry-runs a replay in the console, starts it, and watches it pause itself against a target that still fails", async ({ page }) => {
  // A target that answers 503: five jobs with one attempt each die against it.
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end('{"ok":false}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  try {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await client.call("createJob", { body: { target: { url: `http://127.0.0.1:${port}/charge/${i}` }, maxAttempts: 1 } });
      if (!res.ok) throw new Error(JSON.stringify(res.problem));
      ids.push(res.body.id);
    }
    await expect
      .poll(async () => (await Promise.all(ids.map(async (id) => { const j = await client.call("getJob", { params: { id } }); return j.ok ? j.body.status : "?"; }))).join(","), { timeout: 30_000 })
      .toBe("dead,dead,dead,dead,dead");

    await page.goto("/login");
    await page.getByLabel("Email").fill(state.email);
    await page.getByLabel("Password").fill(state.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "Dead letters" }).click();
    await expect(page.getByRole("table", { name: "Dead jobs" })).toContainText(`127.0.0.1:${port}`);

    const form = page.getByRole("form", { name: "Replay" });
    await form.getByLabel("Dependency").fill(`127.0.0.1:${port}`);
    await form.getByLabel("HTTP status").fill("503");
    await form.getByLabel("Rate (jobs/s)").fill("1");
    // Judged over 3 of the 5 at 1/s: the verdict comes while jobs are still left to protect (a replay with none
    // left completes instead of pausing).
    await form.getByLabel("Judged over the last (jobs)").fill("3");
    await form.getByRole("button", { name: "Dry run" }).click();
    await expect(page.getByTestId("replay-preview")).toContainText("5 dead jobs match; about 5 s at 1/s.");

    await form.getByRole("button", { name: "Start replay" }).click();
    const card = page.locator("article").first();
    await expect(card.getByTestId("replay-status")).toHaveText("auto-paused", { timeout: 30_000 });
    await expect(card.getByRole("status")).toContainText("3 of the last 3 replayed jobs failed again (100%, threshold 50%). Errors: http_status 503 (3)");
    await expect(card.locator('[data-progress="failed"]')).toHaveText(/^[3-5]$/);
    await page.screenshot({ path: "test-results/dlq-replay.png", fullPage: true });

    await card.getByRole("button", { name: "Cancel" }).click();
    await expect(card.getByTestId("replay-status")).toHaveText("cancelled");
    await checkPageAtWidths(page, "dlq", async () => {
      await expect(page.getByRole("table", { name: "Dead jobs" })).toBeVisible();
    });

    const audit = await client.call("listAuditLog", { query: { targetType: "dlq_replay", limit: 10 } });
    if (!audit.ok) throw new Error("audit failed");
    const replayId = await card.getAttribute("data-replay-id");
    expect(audit.body.data.filter((e) => e.targetId === replayId).map((e) => [e.action, e.actorType]).reverse()).toEqual([
      ["dlq.replay.created", "user"],
      ["dlq.replay.auto_paused", "system"],
      ["dlq.replay.cancelled", "user"],
    ]);
  } finally {
    server.close();
  }
});
