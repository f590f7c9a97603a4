import { expect, test, type Page } from "@playwright/test";
import { checkPageAtWidths } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const viewerEmail = `viewer-${Date.now().toString(36)}@example.test`;
const viewerPassword = "viewer passphrase 1234";

async function signInAsDemoOwner(page: Page) {
  await page.goto("/login");
  await page.getByLabel("Email").fill(state.email);
  await page.getByLabel("Password").fill(state.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByText(`Signed in as ${state.email}`)).toBeVisible();
}

test("an owner invites a viewer; the viewer accepts in another browser, reads jobs, and is refused what a viewer may not do", async ({ page, browser }) => {
  await signInAsDemoOwner(page);
  await page.goto("/members");
  await checkPageAtWidths(page, "members", async () => {
    await expect(page.getByTestId("member-row").filter({ hasText: state.email })).toBeVisible();
  });
  await page.getByLabel("Email", { exact: true }).fill(viewerEmail);
  await page.getByLabel("Role", { exact: true }).selectOption("viewer");
  await page.getByRole("button", { name: "Invite", exact: true }).click();
  const link = (await page.getByTestId("invitation-link").getByTestId("secret-value").textContent())!.trim();
  expect(link).toMatch(/\/invite#token=/);
  await expect(page.getByTestId("invitation-row").filter({ hasText: viewerEmail })).toContainText("pending");
  await page.screenshot({ path: "test-results/members-invited-1280.png", fullPage: true });

  // The invitee, in a browser of their own.
  const other = await browser.newContext();
  try {
    const invitee = await other.newPage();
    await invitee.goto(link);
    await expect(invitee.getByTestId("invitation-summary")).toContainText("as viewer");
    await checkPageAtWidths(invitee, "invite", async () => {
      await expect(invitee.getByRole("button", { name: /^Join / })).toBeVisible();
    });
    await invitee.getByLabel(/^Choose a password/).fill(viewerPassword);
    await invitee.getByRole("button", { name: /^Join / }).click();
    await expect(invitee.getByText(`Signed in as ${viewerEmail}`)).toContainText("(viewer)");

    // Reads jobs: the dashboard and the dead letters load.
    await invitee.goto("/dlq");
    await expect(invitee.getByRole("button", { name: /dry run/i })).toBeDisabled();
    // Cannot create keys: the form is disabled and says why…
    await invitee.goto("/keys");
    await expect(invitee.getByTestId("keys-read-only")).toBeVisible();
    await expect(invitee.getByRole("button", { name: "Create key" })).toBeDisabled();
    await invitee.screenshot({ path: "test-results/keys-viewer-1280.png", fullPage: true });
    // Cannot change settings: the page says so; the members page is read-only too.
    await invitee.goto("/settings");
    await expect(invitee.getByTestId("settings-read-only")).toBeVisible();
    await invitee.goto("/members");
    await expect(invitee.getByTestId("members-read-only")).toBeVisible();
    await expect(invitee.getByRole("button", { name: "Invite", exact: true })).toBeDisabled();
    // …and the API refuses it all the same, with the viewer's own session.
    const origin = { origin: state.consoleUrl };
    const jobs = await invitee.request.get(`${state.consoleUrl}/api/v1/jobs`);
    expect(jobs.status()).toBe(200);
    for (const res of [
      await invitee.request.post(`${state.consoleUrl}/api/v1/keys`, { headers: origin, data: { name: "x", scopes: ["jobs:read"] } }),
      await invitee.request.post(`${state.consoleUrl}/api/v1/dlq/replays`, { headers: origin, data: { filter: {}, ratePerSecond: 1, dryRun: true } }),
      await invitee.request.patch(`${state.consoleUrl}/api/v1/settings`, { headers: origin, data: { retentionDays: 3 } }),
    ]) {
      expect(res.status()).toBe(403);
      expect(((await res.json()) as { type: string }).type).toBe("https://tick.dev/problems/forbidden");
    }
    // The link was single use.
    const reuse = await invitee.request.post(`${state.consoleUrl}/api/v1/invitations/accept`, { data: { token: link.split("#token=")[1], password: viewerPassword } });
    expect(reuse.status()).toBe(404);
  } finally {
    await other.close();
  }

  // Back with the owner: the invitation is accepted and the viewer listed.
  await page.reload();
  await expect(page.getByTestId("invitation-row").filter({ hasText: viewerEmail })).toContainText("accepted");
  await expect(page.getByTestId("member-row").filter({ hasText: viewerEmail })).toBeVisible();
  // The audit log names who invited and who joined.
  await page.goto("/audit");
  const row = (action: string, who: string) => page.getByTestId("audit-row").filter({ hasText: action }).filter({ hasText: who }).first();
  await page.getByLabel("Action").fill("member.invited");
  await expect(row("member.invited", state.email)).toBeVisible();
  await page.getByLabel("Action").fill("member.joined");
  await expect(row("member.joined", viewerEmail)).toBeVisible();
});
