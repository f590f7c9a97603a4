import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "./openapi.js";
import { routes } from "./routes.js";

const doc = buildOpenApiDocument(routes);

function refsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refsIn(n, out));
  else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe("OpenAPI document", () => {
  it("has one operation per route, with its scope and the problem responses", () => {
    for (const [operationId, route] of Object.entries(routes)) {
      const op = (doc.paths[route.path] as Record<string, Record<string, unknown>>)[route.method]!;
      expect(op.operationId).toBe(operationId);
      const responses = op.responses as Record<string, { content?: Record<string, unknown> }>;
      for (const status of Object.keys(route.responses)) expect(responses[status]).toBeDefined();
      if (route.scope === null) {
        // Public (sign-up): no credentials asked for, so no scope and no 401.
        expect(op["x-required-scope"]).toBeUndefined();
        expect(op.security).toEqual([]);
        expect(responses["401"]).toBeUndefined();
      } else {
        expect(op["x-required-scope"]).toBe(route.scope);
        expect(responses["401"]?.content?.["application/problem+json"]).toBeDefined();
      }
      expect(responses["503"]).toBeDefined();
    }
  });

  it("every $ref points at a component schema that exists (no dangling local $defs)", () => {
    const refs = refsIn(doc);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas).toHaveProperty(ref.slice("#/components/schemas/".length));
    }
  });

  it("documents path parameters as required and the Idempotency-Key header on creation", () => {
    const getJob = (doc.paths["/jobs/{id}"] as Record<string, { parameters: { name: string; in: string; required: boolean }[] }>).get!;
    expect(getJob.parameters).toContainEqual(expect.objectContaining({ name: "id", in: "path", required: true }));
    const create = (doc.paths["/jobs"] as Record<string, { parameters: { name: string; in: string }[] }>).post!;
    expect(create.parameters).toContainEqual(expect.objectContaining({ name: "Idempotency-Key", in: "header" }));
  });
});
