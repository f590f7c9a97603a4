export * from "./common.js";
export * from "./scopes.js";
export * from "./jobs.js";
export * from "./queues.js";
export * from "./keys.js";
export * from "./routes.js";
export * from "./openapi.js";
export * from "./webhooks.js";
