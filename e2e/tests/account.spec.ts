import { expect, test } from "@playwright/test";
import { checkPageAtWidths, signIn } from "./page-checks";
import { productState } from "./product-state";

const state = productState();

test("the Account page lists where the person is signed in, shows a wrong password at its field, and signs out everywhere", async ({ page, browser }) => {
  // The same person, signed in in a second browser too.
  const other = await browser.newContext({ baseURL: state.consoleUrl });
  try {
    const elsewhere = await other.newPage();
    await signIn(elsewhere, state.email, state.password);
    await signIn(page, state.email, state.password);

    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Account" }).click();
    await expect(page).toHaveURL(/\/account$/);
    await checkPageAtWidths(page, "account", async () => {
      await expect(page.getByTestId("current-session")).toBeVisible();
    });
    await expect(page.getByTestId("current-session")).toHaveCount(1);
    expect(await page.getByTestId("session-row").count()).toBeGreaterThanOrEqual(2);
    await expect(page.getByTestId("session-row").filter({ has: page.getByTestId("current-session") })).toContainText(/Chrome/);

    // A wrong current password is refused at its field; nothing changes.
    await page.locator('input[name="currentPassword"]').fill("not the password at all");
    await page.locator('input[name="newPassword"]').fill("three unrelated words: lantern, moss, ferry");
    await page.locator('input[name="confirmPassword"]').fill("three unrelated words: lantern, moss, ferry");
    await page.getByRole("button", { name: "Change password" }).click();
    await expect(page.getByTestId("error-err-currentPassword")).toHaveText("wrong password");
    await expect(page.locator('input[name="currentPassword"]')).toHaveAttribute("aria-invalid", "true");
    await page.screenshot({ path: "test-results/account-password-error-1280.png", fullPage: true });

    // Sign out everywhere: this browser lands on the sign-in page…
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Sign out everywhere" }).click();
    await expect(page).toHaveURL(/\/login/);
    await page.goto("/account");
    await expect(page).toHaveURL(/\/login/);
    // …and the other browser is signed out on its next request, its cookie notwithstanding.
    expect((await elsewhere.request.get("/api/v1/jobs")).status()).toBe(401);
    await elsewhere.goto("/");
    await expect(elsewhere).toHaveURL(/\/login/);
  } finally {
    await other.close();
  }
});
