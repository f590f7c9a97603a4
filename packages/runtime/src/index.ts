export * from "./env.js";
export * from "./logger.js";
export * from "./metrics.js";
export * from "./health-server.js";
export * from "./shutdown.js";
export * from "./run-service.js";
export * from "./stores.js";
export * from "./fault-points.js";
