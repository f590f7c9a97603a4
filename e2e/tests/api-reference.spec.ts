import { expect, test } from "@playwright/test";

test("the API reference is public and documents operations, scopes and schemas", async ({ page }) => {
  // No login: the page is public and must not redirect to /login.
  await page.goto("/docs/api");
  await expect(page).toHaveURL(/\/docs\/api$/);
  await expect(page.getByRole("heading", { level: 1, name: "Tick API reference" })).toBeVisible();
  await expect(page.getByTestId("base-url")).toHaveText("/api/v1");
  await expect(page.getByRole("link", { name: "/api/v1/openapi.json" })).toHaveAttribute("href", "/api/v1/openapi.json");

  const createJob = page.locator("section#createJob");
  await expect(createJob.getByRole("heading", { name: "Create a job", exact: true })).toBeVisible();
  await expect(createJob.getByTestId("operation-method")).toHaveText("POST");
  await expect(createJob.getByTestId("operation-path")).toHaveText("/jobs");
  await expect(createJob.getByTestId("required-scope")).toHaveText("jobs:write");
  await expect(createJob.getByText("https://tick.dev/problems/idempotency-key-reused")).toBeVisible();

  const jobSchema = page.locator("section#schema-CreatedJob");
  await expect(jobSchema.getByRole("heading", { name: "CreatedJob", exact: true })).toBeAttached();

  // The 201 response's body is a $ref to CreatedJob (a Job, and debouncedInto): a link to the schema's anchor, not
  // an inline expansion.
  const jobRef = createJob.getByRole("link", { name: "CreatedJob", exact: true }).first();
  await expect(jobRef).toHaveAttribute("href", "#schema-CreatedJob");
  await jobRef.click();
  await expect(page).toHaveURL(/\/docs\/api#schema-CreatedJob$/);
  await expect(jobSchema).toBeInViewport();
  await expect(jobSchema.getByRole("heading", { name: "CreatedJob", exact: true })).toBeVisible();

  await page.goto("/docs/api");
  await page.screenshot({ path: "test-results/api-reference.png" });
});
