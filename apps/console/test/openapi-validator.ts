import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { ResponseRecord } from "@tick/client";

/**
 * Checks recorded responses against the OpenAPI document the console serves: the status must be
 * documented for the operation, and the body must match the documented schema for its content type.
 */
/** The parts of the OpenAPI document read here (ajv reads the rest). */
type OpenApiDocument = {
  paths?: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, unknown> } | undefined> } | undefined> | undefined>;
};

export function createOpenApiValidator(baseUrl: string) {
  let loaded: Promise<{ ajv: Ajv2020; doc: OpenApiDocument }> | undefined;
  const load = () =>
    (loaded ??= (async () => {
      const doc = (await (await fetch(`${baseUrl}/api/v1/openapi.json`)).json()) as OpenApiDocument;
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      (addFormats as unknown as (a: Ajv2020) => void)(ajv);
      ajv.addSchema(doc, "openapi.json");
      return { ajv, doc };
    })());

  const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

  return {
    async violations(records: ResponseRecord[]): Promise<string[]> {
      const { ajv, doc } = await load();
      const problems: string[] = [];
      for (const r of records) {
        const op = doc.paths?.[r.path]?.[r.method];
        const label = `${r.method.toUpperCase()} ${r.path} → ${r.status}`;
        if (!op) {
          problems.push(`${label}: operation not documented`);
          continue;
        }
        const response = op.responses?.[String(r.status)];
        if (!response) {
          problems.push(`${label}: status not documented`);
          continue;
        }
        const type = (r.contentType ?? "").split(";")[0]!.trim();
        if (!response.content) continue;
        if (!response.content[type]) {
          problems.push(`${label}: content type ${type} not documented`);
          continue;
        }
        const ref = `openapi.json#/${pointer("paths", r.path, r.method, "responses", String(r.status), "content", type, "schema")}`;
        const validate = ajv.getSchema(ref);
        if (!validate) {
          problems.push(`${label}: no schema at ${ref}`);
          continue;
        }
        // NDJSON: the schema describes each line.
        const items = type === "application/x-ndjson" ? (typeof r.body === "string" ? r.body : "").split("\n").filter(Boolean).map((line): unknown => JSON.parse(line)) : [r.body];
        for (const item of items) {
          if (!validate(item)) problems.push(`${label}: ${ajv.errorsText(validate.errors)} — body ${JSON.stringify(item).slice(0, 300)}`);
        }
      }
      return problems;
    },
  };
}
