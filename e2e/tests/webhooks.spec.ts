import { expect, test } from "@playwright/test";
import { startSink } from "@tick/testing";
import { checkPageAtWidths } from "./page-checks";
import { productState } from "./product-state";

const state = productState();

test("webhooks in the console: add an endpoint on a local sink, a test delivery arrives signed; the sink fails, the delivery fails; redeliver it", async ({ page }) => {
  // The sink: answers 200 or 500 as told, and keeps what it received.
  let failing = false;
  const received: { id: string; signature: string; type: string }[] = [];
  const server = await startSink({
    respond: (req) => {
      received.push({ id: String(req.headers["webhook-id"]), signature: String(req.headers["webhook-signature"]), type: (JSON.parse(req.body) as { type: string }).type });
      return { status: failing ? 500 : 200 };
    },
  });
  const url = server.url(`/hooks/${Date.now().toString(36)}`);
  try {
    await page.goto("/login");
    await page.getByLabel("Email").fill(state.email);
    await page.getByLabel("Password").fill(state.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Webhooks" }).click();

    await page.getByLabel("URL").fill(url);
    await page.getByLabel(/^Description/).fill("e2e sink");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const endpoint = page.getByTestId("endpoint-row").filter({ hasText: url });
    await expect(endpoint).toContainText("enabled");

    // A test delivery arrives, signed, and shows as delivered with its answer and latency.
    await endpoint.getByRole("button", { name: `Send test to ${url}` }).click();
    await endpoint.getByRole("button", { name: `Show log of ${url}` }).click();
    const rows = page.getByTestId("delivery-row");
    await expect(rows.first()).toContainText("delivered", { timeout: 20_000 });
    await expect(rows.first()).toContainText("HTTP 200");
    await expect(rows.first()).toContainText(/\d+ ms/);
    expect(received[0]).toMatchObject({ type: "webhook.test" });
    expect(received[0]!.signature).toMatch(/^v1,/);
    await checkPageAtWidths(page, "webhooks", async () => {
      await expect(rows.first()).toBeVisible();
    });

    // The sink fails: the next test delivery is tried, retried, and marked failed (2 tries in this product).
    failing = true;
    await endpoint.getByRole("button", { name: `Send test to ${url}` }).click();
    await expect(rows.first()).toContainText("failed", { timeout: 20_000 });
    await expect(rows.first()).toContainText("HTTP 500");
    await expect(rows.first()).toContainText("2 tries");
    await page.screenshot({ path: "test-results/webhooks-failed-1280.png", fullPage: true });

    // Fixed, redelivered from the log: one more try, delivered.
    failing = false;
    const failedId = received.at(-1)!.id;
    await rows.first().getByRole("button", { name: /^Redeliver / }).click();
    await expect(rows.first()).toContainText("delivered", { timeout: 20_000 });
    await expect(rows.first()).toContainText("3 tries");
    expect(received.filter((r) => r.id === failedId)).toHaveLength(3); // the same webhook-id every try

    // Each change is in the audit log under the demo owner's name.
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Audit log" }).click();
    for (const action of ["webhook_endpoint.created", "webhook_endpoint.tested", "webhook_delivery.redelivered"]) {
      await page.getByLabel("Action").fill(action);
      await expect(page.getByTestId("audit-row").first()).toContainText(state.email);
      await expect(page.getByTestId("audit-row").first()).toContainText(action);
    }
  } finally {
    await server.close();
  }
});
