import { expect, test } from "@playwright/test";
import { productState } from "./product-state";

const state = productState();

test("console, scheduler and worker all report ready", async ({ request }) => {
  for (const [app, url] of Object.entries(state.health)) {
    const res = await request.get(url);
    expect(res.status(), `${app} ${url}`).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe("ready");
  }
  const live = await request.get("/healthz");
  expect(await live.json()).toEqual({ status: "ok" });
});

test("the OpenAPI document describes the problem+json error model", async ({ request }) => {
  const res = await request.get("/api/v1/openapi.json");
  expect(res.status()).toBe(200);
  const doc = (await res.json()) as { openapi: string; components: { schemas: { Problem: { properties: { type: { enum: string[] } } } } } };
  expect(doc.openapi).toBe("3.1.0");
  expect(doc.components.schemas.Problem.properties.type.enum).toContain("https://tick.dev/problems/rate-limited");
});

test("console, scheduler and worker expose Prometheus metrics on their side ports, the console not on its public port", async ({ request }) => {
  for (const app of ["console", "scheduler", "worker"] as const) {
    const metrics = await request.get(state.metrics[app]);
    expect(metrics.status(), state.metrics[app]).toBe(200);
    expect(await metrics.text()).toContain(`app="${app}"`);
  }
  expect((await request.get("/metrics")).status()).toBe(404);
});
