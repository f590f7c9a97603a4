export * from "./client.js";
export * from "./commit-outcome.js";
export * from "./api-keys.js";
export * from "./passwords.js";
export * from "./shards.js";
export * from "./seed.js";
export * as sql from "./sql/index.js";
export { inTransaction, type Queryable } from "./sql/types.js";
export * from "./signing-secrets.js";
