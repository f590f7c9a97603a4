export * from "./wait-for.js";
export * from "./redis-prefix.js";
export * from "./child-process.js";
