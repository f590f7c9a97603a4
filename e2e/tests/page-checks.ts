import AxeBuilder from "@axe-core/playwright";
import { expect, type Page } from "@playwright/test";

/** No sideways scrolling at this width: the page is no wider than the viewport. */
export async function expectNoHorizontalScroll(page: Page) {
  // Right after a viewport change, elements that size themselves from a ResizeObserver (the charts) are
  // still at the old width for a frame: judge the layout once it has settled, and fail if it never does.
  await expect
    .poll(() => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), { message: "page wider than the viewport" })
    .toBeLessThanOrEqual(0);
}

/**
 * The console's page bar, at 1280 and 390 px: no sideways scrolling, no axe-core violation, and a
 * full-page screenshot kept under test-results/ (`name`-`width`.png) for a person to look at.
 * `ready` waits for what must be on screen before the page is judged.
 */
export async function checkPageAtWidths(page: Page, name: string, ready: () => Promise<void>) {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await ready();
    // Next streams a dynamic page's metadata after its body: judge the page once its <title> has arrived.
    await expect(page).toHaveTitle(/\S/);
    await expectNoHorizontalScroll(page);
    expect((await new AxeBuilder({ page }).analyze()).violations).toEqual([]);
    await page.screenshot({ path: `test-results/${name}-${width}.png`, fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Signs in as the product's demo user and waits until the console is shown (a goto before that lands on /login). */
export async function signIn(page: Page, email: string, password: string) {
  await page.goto("/login");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("navigation", { name: "Console" })).toBeVisible();
}
