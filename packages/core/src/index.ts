export * from "./job-state-machine.js";
export * from "./attempt-state-machine.js";
export * from "./errors.js";
export * from "./job-failure.js";
export * from "./backoff.js";
export * from "./duration.js";
export * from "./ssrf.js";
