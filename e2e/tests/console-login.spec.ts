import { expect, test } from "@playwright/test";
import { checkPageAtWidths } from "./page-checks";
import { productState } from "./product-state";

const state = productState();

test("an anonymous visitor is sent to the login page", async ({ page }) => {
  await page.goto("/");
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByRole("heading", { name: "Sign in to Tick" })).toBeVisible();
  // Tailwind is compiled in: the button's utility class produced a real background colour.
  const background = await page.getByRole("button", { name: "Sign in" }).evaluate((el) => getComputedStyle(el).backgroundColor);
  expect(background).not.toBe("rgba(0, 0, 0, 0)");
  await checkPageAtWidths(page, "login", async () => {
    await expect(page.getByRole("link", { name: "Create an account" })).toBeVisible();
  });
});

test("a wrong password is refused with a message", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("Email").fill(state.email);
  await page.getByLabel("Password").fill("not-the-password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.locator("form").getByRole("alert")).toHaveText("Wrong email or password.");
  await expect(page).toHaveURL(/\/login/);
});

test("the demo owner signs in and sees the tenant dashboard", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("Email").fill(state.email);
  await page.getByLabel("Password").fill(state.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Tick", exact: true })).toBeVisible();
  await expect(page.getByText(`Signed in as ${state.email} · Demo tenant (owner)`)).toBeVisible();
  await expect(page.getByRole("list", { name: "Jobs by status" })).toBeVisible();
  await expect(page.getByTestId("queue-count")).toHaveText("1");
  await expect(page.getByTestId("retention")).toHaveText("7 days (DLQ 30)");
  // The export link downloads the tenant's finished jobs as NDJSON with the session, ending in its end line.
  const download = page.waitForEvent("download");
  await page.getByTestId("export-link").click();
  const ndjson = await (await download).createReadStream().then(async (stream) => {
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  });
  const last = JSON.parse(ndjson.trim().split("\n").at(-1)!) as { type: string; count?: unknown };
  expect(last).toMatchObject({ type: "end" });
  expect(typeof last.count).toBe("number");
  await page.screenshot({ path: "test-results/dashboard.png", fullPage: true });

  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
  await page.goto("/");
  await expect(page).toHaveURL(/\/login$/);
});
