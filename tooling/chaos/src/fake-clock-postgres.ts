import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@tick/testing";
import { chownTree, findPostgresBin, initPostgres, postgresOwner, startPostgres } from "./private-postgres.js";

/** Debian's libfaketime (apt package `faketime`), if installed. */
function findLibfaketime(): string | null {
  for (const dir of ["/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime"]) {
    const lib = path.join(dir, "libfaketime.so.1");
    if (fs.existsSync(lib)) return lib;
  }
  return null;
}

/**
 * A private Postgres whose clock is injected (S14): it runs under libfaketime starting at `startAt`
 * and then ticks at the normal rate, in every backend alike. Tick takes every due-time decision from
 * the database clock, so the whole product lives through that instant: a DST transition, say, while
 * the app hosts' own clocks say something else entirely. Null when libfaketime or the Postgres
 * binaries are missing.
 */
export async function startFakeClockPostgres(startAt: string): Promise<{ url: string; stop: () => Promise<void> } | null> {
  const lib = findLibfaketime();
  const bin = findPostgresBin();
  if (!lib || !bin) return null;
  let owner: ReturnType<typeof postgresOwner>;
  try {
    owner = postgresOwner();
  } catch {
    return null; // root, and no postgres user to run it as
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tick-chaos-pg-"));
  chownTree(dir, owner);
  const data = path.join(dir, "data");
  await initPostgres(bin, data, owner);
  const server = await startPostgres({
    bin,
    dataDir: data,
    port: await freePort(),
    socketDir: dir,
    owner,
    settings: { fsync: "off", synchronous_commit: "off", max_connections: 300 },
    env: { ...process.env, TZ: "UTC", LD_PRELOAD: lib, FAKETIME: `@${startAt}`, FAKETIME_DONT_RESET: "1" },
  });
  return {
    url: server.url("postgres"),
    async stop() {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
