export * from "./types.js";
export * from "./jobs.js";
export * from "./api-keys.js";
export * from "./shard-leases.js";
export * from "./dispatch.js";
export * from "./outbox.js";
export * from "./reaper.js";
export * from "./attempts.js";
