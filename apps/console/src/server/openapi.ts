import { ERROR_CODES, problemType, type ErrorCode } from "@tick/core";

/**
 * The public API's OpenAPI document, served at /api/v1/openapi.json. Resource paths are added here
 * as each resource lands; the error model and security scheme below are shared by all of them.
 */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "Tick API",
    version: "1.0.0",
    description:
      "Durable, fair job scheduling. Authenticate with `Authorization: Bearer <API key>`. Errors are RFC 9457 " +
      "problem documents whose `type` is stable. Creation is idempotent with the `Idempotency-Key` header.",
  },
  servers: [{ url: "/api/v1" }],
  security: [{ apiKey: [] }],
  paths: {},
  components: {
    securitySchemes: { apiKey: { type: "http", scheme: "bearer", bearerFormat: "tk_<prefix>_<secret>" } },
    schemas: {
      Problem: {
        type: "object",
        required: ["type", "title", "status", "detail"],
        properties: {
          type: { type: "string", format: "uri", enum: (Object.keys(ERROR_CODES) as ErrorCode[]).map(problemType) },
          title: { type: "string" },
          status: { type: "integer" },
          detail: { type: "string" },
          instance: { type: "string" },
          errors: {
            type: "array",
            description: "Present on validation_failed: one entry per invalid field.",
            items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } },
          },
        },
      },
    },
  },
} as const;
