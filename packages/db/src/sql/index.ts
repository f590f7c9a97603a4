export * from "./types.js";
export * from "./jobs.js";
export * from "./api-keys.js";
