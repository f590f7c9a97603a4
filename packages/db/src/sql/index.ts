export * from "./types.js";
export * from "./jobs.js";
export * from "./api-keys.js";
export * from "./shard-leases.js";
