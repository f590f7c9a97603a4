import { buildOpenApiDocument, routes } from "@tick/contract";

/** Served at /api/v1/openapi.json: generated from the same zod schemas that validate requests. */
export const openApiDocument = buildOpenApiDocument(routes);
