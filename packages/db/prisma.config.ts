import "dotenv/config";
import { fileURLToPath } from "node:url";
import { defineConfig } from "prisma/config";

// Offline: without this the Prisma CLI downloads its native schema engine on every command
// (even `prisma generate`) and fails. The shim runs @prisma/schema-engine-wasm over
// @prisma/adapter-pg instead. Set here, not in the shell, so turbo's strict env mode keeps it.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(
  new URL("./scripts/schema-engine-wasm.mjs", import.meta.url),
);

export default defineConfig({
  schema: "../../prisma/schema.prisma",
  migrations: { path: "../../prisma/migrations" },
  // env("DATABASE_URL") would throw even for `prisma generate` when the variable is unset
  datasource: { url: process.env.DATABASE_URL ?? "" },
});
