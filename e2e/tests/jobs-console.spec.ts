import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect, test, type Page } from "@playwright/test";
import { createTickClient } from "@tick/client";
import { checkPageAtWidths, signIn as signInAs } from "./page-checks";
import { productState } from "./product-state";

const state = productState();
const client = createTickClient({ baseUrl: state.consoleUrl, apiKey: state.apiKey });

const signIn = (page: Page) => signInAs(page, state.email, state.password);

test("jobs in the console: a form with the API's errors at their fields, a job that fails once then succeeds on its timeline, run again", async ({ page }) => {
  // The target fails its first call (500) and answers 200 after.
  let calls = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      calls += 1;
      res.writeHead(calls === 1 ? 500 : 200, { "content-type": "application/json" }).end(calls === 1 ? '{"error":"try later"}' : '{"done":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`;
  try {
    await signIn(page);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Jobs" }).click();
    await expect(page.getByRole("heading", { name: "Jobs" })).toBeVisible();
    await page.getByRole("link", { name: "New job" }).click();

    // The API's refusals land at their fields: a scheme it will not call, and a header line without a colon.
    await page.getByLabel("Target URL").fill("ftp://example.com/x");
    await page.getByLabel("Headers").fill("not a header");
    await page.getByTestId("create-job").click();
    await expect(page.getByTestId("error-err-headers")).toContainText("Name: value");
    await page.getByLabel("Headers").fill("X-Team: billing");
    await page.getByTestId("create-job").click();
    await expect(page.getByTestId("error-err-url")).toBeVisible();
    await expect(page.getByLabel("Target URL")).toHaveAttribute("aria-invalid", "true");
    await checkPageAtWidths(page, "job-new", async () => {
      await expect(page.getByTestId("error-err-url")).toBeVisible();
    });

    // A job that fails once and then succeeds: two attempts, fencing tokens 1 and 2, on one time axis.
    await page.getByLabel("Target URL").fill(url);
    await page.getByLabel("Body").fill('{"order":42}');
    await page.getByLabel("Max attempts").fill("3");
    await page.getByLabel("Backoff").selectOption("fixed");
    await page.getByLabel("Base delay (ms)").fill("500");
    await page.getByLabel("Longest delay (ms)").fill("1000");
    const key = `e2e-form-${Date.now()}`;
    await page.getByLabel("Idempotency key").fill(key);
    await page.getByTestId("create-job").click();
    await expect(page).toHaveURL(/\/jobs\/[0-9a-f-]{36}$/);
    const jobId = page.url().split("/").at(-1)!;
    await expect(page.getByRole("heading", { name: /^Job / }).locator("..")).toContainText("succeeded", { timeout: 30_000 });
    await expect(page.getByTestId("attempt-row")).toHaveCount(2);
    await expect(page.getByTestId("fencing-token")).toHaveText(["1", "2"]);
    await expect(page.getByTestId("attempt-row").first()).toContainText("HTTP 500");
    await expect(page.getByTestId("timeline-attempt")).toHaveCount(2);
    await checkPageAtWidths(page, "job-detail", async () => {
      await expect(page.getByTestId("attempt-timeline")).toBeVisible();
    });
    expect(calls).toBe(2);

    // Found by its idempotency key from the list.
    await page.goto("/jobs");
    await page.getByTestId("job-search").fill(key);
    await page.getByRole("button", { name: "Find" }).click();
    await expect(page.getByTestId("job-row")).toHaveCount(1);
    await expect(page.getByTestId("job-row")).toHaveAttribute("data-job-id", jobId);

    // Run again: a new job, same target, a new idempotency key; the target is called once more.
    await page.getByTestId("job-row").getByRole("link").first().click();
    await page.getByTestId("rerun-job").click();
    await page.getByTestId("confirm-rerun").click();
    await expect(page).not.toHaveURL(new RegExp(jobId));
    await expect(page.getByRole("heading", { name: /^Job / }).locator("..")).toContainText("succeeded", { timeout: 30_000 });
    const rerun = await client.call("getJob", { params: { id: page.url().split("/").at(-1)! } });
    expect(rerun.ok && rerun.body.metadata).toMatchObject({ rerunOf: jobId });
    expect(rerun.ok && rerun.body.idempotencyKey).not.toBe(key);
    expect(calls).toBe(3);
  } finally {
    server.close();
  }
});

test("jobs in the console: filter, select and cancel in bulk with a result per job; a scheduled job's cancel says the target never received it", async ({ page }) => {
  const tag = `bulk-${Date.now()}`;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await client.call("createJob", { body: { target: { url: `http://127.0.0.1:9/${tag}` }, delayMs: 3_600_000, metadata: { tag } }, idempotencyKey: `${tag}-${i}` });
    if (!res.ok) throw new Error(JSON.stringify(res.problem));
    ids.push(res.body.id);
  }
  await signIn(page);
  await page.goto("/jobs");
  await page.getByTestId("filter-status").selectOption("scheduled");
  for (const id of ids.slice(0, 2)) await page.getByRole("checkbox", { name: `Select job ${id.slice(0, 8)}` }).check();
  await checkPageAtWidths(page, "jobs-list", async () => {
    await expect(page.getByTestId("bulk-cancel")).toHaveText("Cancel 2 selected");
  });
  await page.getByTestId("bulk-cancel").click();
  await expect(page.getByRole("alertdialog")).toContainText("may already have happened");
  await page.getByTestId("confirm-bulk-cancel").click();
  const results = page.getByTestId("bulk-results");
  await expect(results.getByRole("listitem")).toHaveCount(2);
  await expect(results).toContainText(`${ids[0]!.slice(0, 8)} cancelled`);
  await expect(results).toContainText(`${ids[1]!.slice(0, 8)} cancelled`);
  for (const id of ids.slice(0, 2)) {
    const job = await client.call("getJob", { params: { id } });
    expect(job.ok && job.body.status).toBe("cancelled");
  }

  // The third, from its own page: the honest wording first, then the API's answer.
  await page.goto(`/jobs/${ids[2]}`);
  await expect(page.getByTestId("no-attempts")).toBeVisible();
  await page.getByTestId("cancel-job").click();
  await expect(page.getByTestId("cancel-wording")).toHaveText("No attempt has started: the target will never receive this job.");
  await page.getByTestId("confirm-cancel").click();
  await expect(page.getByTestId("cancel-answer")).toContainText("the target never received this job");
  await expect(page.getByRole("heading", { name: /^Job / }).locator("..")).toContainText("cancelled");

  // An unknown job is said so, not a blank page.
  await page.goto("/jobs/00000000-0000-4000-8000-000000000000");
  await expect(page.getByTestId("job-not-found")).toBeVisible();
});

test("a dead job's page shows every attempt on its timeline, each with its error", async ({ page }) => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(503, { "content-type": "text/plain" }).end("down for maintenance"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  try {
    const created = await client.call("createJob", {
      body: { target: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/always-down` }, maxAttempts: 3, backoff: { strategy: "fixed", baseMs: 200, maxMs: 400, jitter: "none" } },
    });
    if (!created.ok) throw new Error(JSON.stringify(created.problem));
    await expect.poll(async () => { const j = await client.call("getJob", { params: { id: created.body.id } }); return j.ok ? j.body.status : "?"; }, { timeout: 30_000 }).toBe("dead");

    await signIn(page);
    await page.goto("/jobs");
    await page.getByTestId("filter-status").selectOption("dead");
    await page.locator(`[data-job-id="${created.body.id}"]`).getByRole("link").first().click();
    await expect(page.getByTestId("timeline-attempt")).toHaveCount(3);
    await expect(page.getByTestId("attempt-row")).toHaveCount(3);
    for (const row of await page.getByTestId("attempt-row").all()) await expect(row).toContainText("HTTP 503");
    await expect(page.getByTestId("job-last-error")).toContainText("HTTP 503");
    await expect(page.getByTestId("fencing-token")).toHaveText(["1", "2", "3"]);
    await page.getByTestId("attempt-row").first().getByText("Response body (excerpt)").click();
    await expect(page.getByTestId("attempt-row").first()).toContainText("down for maintenance");
    await page.screenshot({ path: "test-results/job-dead-1280.png", fullPage: true });
  } finally {
    server.close();
  }
});
