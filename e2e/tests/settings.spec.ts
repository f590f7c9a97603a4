import fs from "node:fs";
import { expect, test } from "@playwright/test";
import { checkPageAtWidths } from "./page-checks";
import { productState } from "./product-state";

const state = productState();

test("settings: an owner changes retention (audited), downloads the export, and reads the tenant's limits", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("Email").fill(state.email);
  await page.getByLabel("Password").fill(state.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Settings" }).click();
  await expect(page.getByTestId("tenant-limits")).toContainText("Attempts in flight at once");
  await checkPageAtWidths(page, "settings", async () => {
    await expect(page.getByLabel("Keep finished jobs (days)")).toBeVisible();
  });

  const original = await page.getByLabel("Keep finished jobs (days)").inputValue();
  await page.getByLabel("Keep finished jobs (days)").fill("14");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
  await page.reload();
  await expect(page.getByLabel("Keep finished jobs (days)")).toHaveValue("14");

  // The download is a form post (it records the export): the file arrives, ends with its end line, and moves the mark.
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("settings-export-button").click()]);
  expect(download.suggestedFilename()).toBe("jobs.ndjson");
  const text = fs.readFileSync(await download.path(), "utf8").trim().split("\n");
  const end = JSON.parse(text.at(-1)!) as { type: string; exportedThrough: string | null };
  expect(end.type).toBe("end");
  expect(end.exportedThrough).not.toBeNull();

  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Audit log" }).click();
  await expect(page.getByTestId("audit-row").filter({ hasText: "tenant.settings.updated" }).first()).toContainText(state.email);

  // Put it back for the other tests.
  await page.goto("/settings");
  await page.getByLabel("Keep finished jobs (days)").fill(original);
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status")).toHaveText("Saved.");
});
