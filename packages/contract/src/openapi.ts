import { z } from "zod";
import { ERROR_CODES, problemType, type ErrorCode } from "@tick/core";
import { problemSchema } from "./common.js";
import type { RouteDef } from "./routes.js";

/** Problems any authenticated operation may answer. */
const COMMON_ERRORS: ErrorCode[] = ["unauthorized", "forbidden", "rate_limited", "database_unavailable", "service_unavailable", "internal"];
/** Every write commits a transaction, and a connection lost during its COMMIT leaves the outcome unknown. */
const WRITE_ERRORS: ErrorCode[] = ["outcome_unknown"];

type Json = Record<string, unknown>;

/**
 * Named schemas (zod `.meta({ id })`) go to components/schemas and are referenced from there. zod emits
 * them as local `$defs`; those refs would resolve against the OpenAPI document root, so they are moved
 * and rewritten. A schema whose input form differs from its output form (defaults make fields optional
 * on input) gets an `Input` suffix for the input form.
 */
class ComponentCollector {
  readonly schemas: Record<string, Json> = {};

  convert(schema: z.ZodType, io: "input" | "output"): Json {
    const raw = z.toJSONSchema(schema, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
    const { $schema: _s, $defs, ...root } = raw as Json & { $defs?: Record<string, Json> };
    const rename: Record<string, string> = {};
    const rewrite = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(rewrite);
      if (!node || typeof node !== "object") return node;
      const out: Json = {};
      for (const [k, v] of Object.entries(node as Json)) {
        out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/")
          ? `#/components/schemas/${rename[v.slice(8)] ?? v.slice(8)}`
          : rewrite(v);
      }
      return out;
    };
    // First pass with every id kept, to see which differ from a component already collected.
    for (const [id, def] of Object.entries($defs ?? {})) {
      const existing = this.schemas[id];
      rename[id] = existing && JSON.stringify(existing) !== JSON.stringify(rewrite(def)) ? `${id}Input` : id;
    }
    for (const [id, def] of Object.entries($defs ?? {})) this.schemas[rename[id]!] ??= rewrite(def) as Json;
    return rewrite(root) as Json;
  }
}

function parametersOf(route: RouteDef, components: ComponentCollector) {
  const out: Record<string, unknown>[] = [];
  for (const [where, obj] of [["path", route.params], ["query", route.query]] as const) {
    if (!obj) continue;
    const schema = components.convert(obj, "input") as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      const { description, ...rest } = prop;
      out.push({ name, in: where, required: where === "path" || (schema.required ?? []).includes(name), schema: rest, ...(description ? { description } : {}) });
    }
  }
  if (route.idempotent) {
    out.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description: "Any unique string up to 255 characters; the same key with the same body returns the original job. Kept at least 24 hours.",
      schema: { type: "string", maxLength: 255 },
    });
  }
  return out;
}

const toOpenApiPath = (path: string) => path;

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export function buildOpenApiDocument(routeTable: Record<string, RouteDef>, options: { version?: string } = {}) {
  const components = new ComponentCollector();
  components.convert(problemSchema, "output");
  const problemRef = { $ref: "#/components/schemas/Problem" };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, route] of Object.entries(routeTable)) {
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses)) {
      const headers: Record<string, unknown> = {};
      if (route.idempotent) headers["Idempotent-Replayed"] = { schema: { type: "string", enum: ["true"] }, description: "Present on a replay" };
      responses[status] = {
        description: response.description,
        ...(Object.keys(headers).length ? { headers } : {}),
        ...(response.schema ? { content: { [response.contentType ?? "application/json"]: { schema: components.convert(response.schema, "output") } } } : {}),
      };
    }
    // A public operation takes no credentials, so it never answers 401.
    const common = route.scope === null ? COMMON_ERRORS.filter((c) => c !== "unauthorized") : COMMON_ERRORS;
    for (const code of [...new Set([...route.errors, ...common, ...(route.method === "get" ? [] : WRITE_ERRORS)])]) {
      const status = String(ERROR_CODES[code].status);
      const existing = responses[status] as { description: string; "x-problem-types": string[] } | undefined;
      if (existing?.["x-problem-types"]) {
        existing["x-problem-types"].push(problemType(code));
        existing.description += `; ${ERROR_CODES[code].title}`;
        continue;
      }
      responses[status] = {
        description: ERROR_CODES[code].title,
        "x-problem-types": [problemType(code)],
        ...(status === "429" || status === "503"
          ? { headers: { "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait before retrying" } } }
          : {}),
        content: { "application/problem+json": { schema: problemRef } },
      };
    }
    const path = toOpenApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method] = {
      operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      ...(route.scope === null
        ? { security: [] }
        : route.scope === "platform" || route.scope === "account"
          ? { security: [{ consoleSession: [] }], "x-required-scope": route.scope }
          : { "x-required-scope": route.scope }),
      parameters: parametersOf(route, components),
      ...(route.body
        ? { requestBody: { required: true, content: { "application/json": { schema: components.convert(route.body, "input") } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Tick API",
      version: options.version ?? "1.0.0",
      description:
        "Durable, fair job scheduling. Authenticate with `Authorization: Bearer <API key>`; each operation names the " +
        "scope it needs (`x-required-scope`; `admin` holds all). Errors are RFC 9457 problem documents whose `type` " +
        "is stable. Creation is idempotent with the `Idempotency-Key` header. Every attempt of a job is sent with the " +
        "same Idempotency-Key, a new Tick-Attempt-Id and a higher Tick-Fencing-Token: deduplicate on the key and the " +
        "effect happens once.",
    },
    servers: [{ url: "/api/v1" }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", bearerFormat: "tk_<prefix>_<secret>" },
        // Platform operator operations take a console session of a platform operator, and account operations the
        // signed-in person's own session; never an API key.
        consoleSession: { type: "apiKey", in: "cookie", name: "next-auth.session-token" },
      },
      schemas: components.schemas,
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;
