// The prisma CLI depends on @prisma/dev, which depends on @prisma/streams-local: a local durable-streams
// server for `prisma dev` (a local Prisma Postgres) that needs Node 22 or Bun, so `npm ci` warned
// EBADENGINE on Node 20. @prisma/dev imports it only when `prisma dev` starts, which Tick never runs
// (generate and migrate deploy do not load it), so the root package.json installs this module in its place:
// a devDependency on it, and an override pointing @prisma/dev's dependency at that one (an override
// with the file: path itself is dropped on the way through the @tick/db workspace link, npm/cli#9659).
export async function startLocalDurableStreamsServer() {
  throw new Error("`prisma dev` is not available in Tick: @prisma/streams-local (Node 22+) is replaced by a stub (see package.json overrides).");
}
