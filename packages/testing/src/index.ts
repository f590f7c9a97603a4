export * from "./wait-for.js";
export * from "./redis-prefix.js";
export * from "./child-process.js";
export * from "./tcp-proxy.js";
export * from "./free-port.js";
export * from "./rejection-of.js";
export * from "./prometheus.js";
export * from "./otlp-receiver.js";
