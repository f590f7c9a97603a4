import { expect, test, type APIRequestContext } from "@playwright/test";
import { checkPageAtWidths } from "./page-checks";
import { mailsTo, productState, signUpLink, type Mail } from "./product-state";

const state = productState();
const run = Date.now().toString(36);
const email = `founder-${run}@example.test`;
const password = "a long enough passphrase";

test.describe.configure({ mode: "serial" });

/** The `count`th mail to `to`, once the console has written it (mails go out just after the answer). */
async function mailNumber(to: string, count: number): Promise<Mail> {
  await expect.poll(() => mailsTo(state, to).length, { message: `mail #${count} to ${to}` }).toBeGreaterThanOrEqual(count);
  return mailsTo(state, to)[count - 1]!;
}

async function confirm(request: APIRequestContext, link: string) {
  const token = new URL(link).hash.replace(/^#token=/, "");
  return request.post(`${state.consoleUrl}/api/v1/signup/verify`, { data: { token } });
}

test("a new team signs up in the console, confirms by the mailed link, gets its first key once, and uses it over REST", async ({ page, request }) => {
  await page.goto("/login");
  await page.getByRole("link", { name: "Create an account" }).click();
  await expect(page).toHaveURL(/\/signup$/);
  await checkPageAtWidths(page, "signup", async () => {
    await expect(page.getByRole("heading", { name: "Create your Tick account" })).toBeVisible();
  });

  await page.getByLabel("Team or company name").fill(`Founders ${run}`);
  await page.getByLabel("Email").fill(email);
  // A common password is refused at its field, before anything is sent.
  await page.getByLabel(/^Password/).fill("password1234");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("alert").filter({ hasText: "too easy to guess" })).toBeVisible();
  await expect(page.getByLabel(/^Password/)).toHaveAttribute("aria-invalid", "true");
  await page.getByLabel(/^Password/).fill(password);
  await page.getByRole("button", { name: "Create account" }).click();

  const sent = page.getByTestId("signup-check-email");
  await expect(sent).toContainText("Check your email");
  await expect(sent).toContainText(email);
  await expect(sent).toContainText("expires");
  await checkPageAtWidths(page, "signup-check-email", async () => {
    await expect(sent).toBeVisible();
  });

  const mail = await mailNumber(email, 1);
  expect(mail.subject).toContain(`Founders ${run}`);
  expect(mail.text).toContain("create your tenant");
  const link = signUpLink(mail);
  await page.goto(link);
  const secret = page.getByTestId("secret-value");
  await expect(secret).toBeVisible();
  await expect(page.getByTestId("signup-done")).toContainText(`Founders ${run}`);
  const firstKey = (await secret.textContent())!.trim();
  expect(firstKey).toMatch(/^tk_/);
  await checkPageAtWidths(page, "signup-verified", async () => {
    await expect(secret).toBeVisible();
  });

  const queues = await request.get(`${state.consoleUrl}/api/v1/queues`, { headers: { authorization: `Bearer ${firstKey}` } });
  expect(queues.status()).toBe(200);
  expect(((await queues.json()) as { data: { name: string }[] }).data.map((q) => q.name)).toEqual(["default"]);

  // Not signed in here: the console asks for the password chosen at sign-up, then opens the new tenant.
  await page.getByRole("link", { name: "Continue to the console" }).click();
  await expect(page).toHaveURL(/\/login/);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText(`Signed in as ${email} · Founders ${run} (owner)`)).toBeVisible();

  // The link works once: opened again (another tab, a reload) it says so, and shows no key.
  const again = await page.context().newPage();
  await again.goto(link);
  await expect(again.getByTestId("signup-verify-error")).toContainText("used already or has expired");
  await expect(again.getByTestId("secret-value")).toHaveCount(0);
  await checkPageAtWidths(again, "signup-verify-invalid", async () => {
    await expect(again.getByTestId("signup-verify-error")).toBeVisible();
  });
  await again.close();
});

test("the API keys page creates a key shown once, lists it, and revokes it; the key works until then", async ({ page, request }) => {
  await signIn(page);
  await page.goto("/keys");
  await checkPageAtWidths(page, "keys", async () => {
    await expect(page.getByTestId("key-row").first()).toBeVisible();
  });

  await page.getByLabel("Name").fill("reporting");
  // Only jobs:read: uncheck the default jobs:write.
  await page.getByRole("checkbox", { name: "jobs:write" }).uncheck();
  await expect(page.getByRole("checkbox", { name: "jobs:read" })).toBeChecked();
  await page.getByRole("button", { name: "Create key" }).click();
  const secret = page.getByTestId("created-key").getByTestId("secret-value");
  await expect(secret).toBeVisible();
  const key = (await secret.textContent())!.trim();
  await page.screenshot({ path: "test-results/keys-created-1280.png", fullPage: true });

  const auth = { authorization: `Bearer ${key}` };
  expect((await request.get(`${state.consoleUrl}/api/v1/jobs`, { headers: auth })).status()).toBe(200);
  expect((await request.post(`${state.consoleUrl}/api/v1/queues`, { headers: auth, data: { name: "nope" } })).status()).toBe(403);

  const row = page.getByTestId("key-row").filter({ hasText: "reporting" });
  await expect(row).toContainText("jobs:read");
  await expect(row).toContainText("Active");
  page.once("dialog", (dialog) => void dialog.accept());
  await row.getByRole("button", { name: "Revoke reporting" }).click();
  await expect(row).toContainText("Revoked");
  expect((await request.get(`${state.consoleUrl}/api/v1/jobs`, { headers: auth })).status()).toBe(401);
  // The secret is gone for good: the page no longer shows it after a reload.
  await page.reload();
  await expect(page.getByTestId("created-key")).toHaveCount(0);
  // Both changes are in the audit log under the founder's email.
  await page.goto("/audit");
  await page.getByLabel("Resource").selectOption("api_key");
  await expect(page.getByTestId("audit-row").filter({ hasText: "api_key.revoked" })).toContainText(email);
  await expect(page.getByTestId("audit-row").filter({ hasText: "api_key.created" }).first()).toContainText(email);
});

test("a person in two tenants switches between them, and the choice is remembered", async ({ page, request }) => {
  const second = `Second ${run}`;
  // Signing up again with the account's email: the same answer as for a new address, and a mail to its owner.
  // The password given here is not applied to the existing account.
  const res = await request.post(`${state.consoleUrl}/api/v1/signup`, { data: { tenantName: second, email, password: "some other passphrase" } });
  expect(res.status()).toBe(202);
  expect(await res.json()).toMatchObject({ status: "verification_sent", email });
  const mail = await mailNumber(email, 2);
  expect(mail.text).toContain("already has a Tick account");
  expect((await confirm(request, signUpLink(mail))).status()).toBe(201);
  await signIn(page);
  const switcher = page.getByTestId("tenant-switcher");
  await expect(switcher).toBeVisible();
  await switcher.selectOption({ label: `${second} (owner)` });
  await expect(page.getByText(`Signed in as ${email} · ${second} (owner)`)).toBeVisible();
  // The key list is the second tenant's: its own first key only.
  await page.goto("/keys");
  await expect(page.getByTestId("key-row")).toHaveCount(1);
  await expect(page.getByTestId("key-row").filter({ hasText: "reporting" })).toHaveCount(0);
  // Remembered on the user, not the tab: a fresh sign-in lands on the same tenant.
  await page.context().clearCookies();
  await signIn(page);
  await expect(page.getByText(`Signed in as ${email} · ${second} (owner)`)).toBeVisible();
  await checkPageAtWidths(page, "dashboard-two-tenants", async () => {
    await expect(page.getByTestId("tenant-switcher")).toBeVisible();
  });
});

async function signIn(page: import("@playwright/test").Page) {
  await page.goto("/login");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText(`Signed in as ${email}`)).toBeVisible();
}
