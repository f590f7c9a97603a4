import { expect, test } from "@playwright/test";
import { checkPageAtWidths } from "./page-checks";
import { mailsTo, productState, signUpLink } from "./product-state";

const state = productState();

test("a platform operator suspends a tenant (its key gets 403 tenant-suspended), changes its limits, and resumes it", async ({ page, request }) => {
  const run = Date.now().toString(36);
  const signUp = await request.post(`${state.consoleUrl}/api/v1/signup`, {
    data: { tenantName: `Suspendable ${run}`, slug: `suspendable-${run}`, email: `s-${run}@example.test`, password: "suspendable passphrase" },
  });
  expect(signUp.status()).toBe(202);
  const addr = `s-${run}@example.test`;
  await expect.poll(() => mailsTo(state, addr).length).toBe(1);
  const token = new URL(signUpLink(mailsTo(state, addr)[0]!)).hash.slice("#token=".length);
  const verified = await request.post(`${state.consoleUrl}/api/v1/signup/verify`, { data: { token } });
  expect(verified.status()).toBe(201);
  const { firstKey } = (await verified.json()) as { firstKey: { key: string } };
  const auth = { authorization: `Bearer ${firstKey.key}` };
  expect((await request.get(`${state.consoleUrl}/api/v1/jobs`, { headers: auth })).status()).toBe(200);

  // The demo login runs this local platform (npm start sets TICK_OPERATOR_EMAILS to it).
  await page.goto("/login");
  await page.getByLabel("Email").fill(state.email);
  await page.getByLabel("Password").fill(state.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Operator" }).click();
  await page.getByLabel("Search").fill(`suspendable-${run}`);
  const row = page.getByTestId("tenant-row").filter({ hasText: `suspendable-${run}` });
  await expect(row).toContainText("active");
  await checkPageAtWidths(page, "operator", async () => {
    await expect(row).toBeVisible();
  });

  page.once("dialog", (dialog) => void dialog.accept("e2e: unpaid invoice"));
  await row.getByRole("button", { name: `Suspend suspendable-${run}` }).click();
  await expect(row).toContainText("suspended since");
  const refused = await request.get(`${state.consoleUrl}/api/v1/jobs`, { headers: auth });
  expect(refused.status()).toBe(403);
  expect(((await refused.json()) as { type: string }).type).toBe("https://tick.dev/problems/tenant-suspended");
  await page.screenshot({ path: "test-results/operator-suspended-1280.png", fullPage: true });

  await row.getByRole("button", { name: `Edit limits of suspendable-${run}` }).click();
  await row.getByLabel("In-flight cap").fill("25");
  await row.getByRole("button", { name: "Save limits" }).click();
  await expect(row).toContainText("in flight ≤ 25");

  await row.getByRole("button", { name: `Resume suspendable-${run}` }).click();
  await expect(row).toContainText("active");
  expect((await request.get(`${state.consoleUrl}/api/v1/jobs`, { headers: auth })).status()).toBe(200);

  // The tenant's owner reads all of it in the audit log, each action with who did it, by name.
  await page.context().clearCookies();
  await page.goto("/login");
  await page.getByLabel("Email").fill(`s-${run}@example.test`);
  await page.getByLabel("Password").fill("suspendable passphrase");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Audit log" }).click();
  const entry = (action: string) => page.getByTestId("audit-row").filter({ hasText: action });
  const operator = `${state.email} (platform operator)`;
  await expect(entry("tenant.suspended")).toContainText(operator);
  await expect(entry("tenant.limits_changed")).toContainText(operator);
  await expect(entry("tenant.resumed")).toContainText(operator);
  await expect(entry("api_key.created")).toContainText(`s-${run}@example.test`);
  await entry("tenant.suspended").getByText("Details").click();
  await expect(entry("tenant.suspended")).toContainText("e2e: unpaid invoice");
  await checkPageAtWidths(page, "audit", async () => {
    await expect(entry("tenant.created")).toBeVisible();
  });
  // Filter by kind of actor: only the operator's three changes.
  await page.getByLabel("Actor").selectOption("operator");
  await expect(page.getByTestId("audit-row")).toHaveCount(3);
});
