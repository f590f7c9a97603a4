export * from "./client.js";
export * from "./api-keys.js";
export * from "./passwords.js";
export * from "./shards.js";
export * from "./seed.js";
