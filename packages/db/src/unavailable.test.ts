import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, createPrismaClient, isDatabaseUnavailable, type PrismaClient } from "./client.js";
import { rejectionOf } from "@tick/testing";
import { createTestDatabase, testServerUrl, type TestDatabase } from "./testing.js";

// The errors the drivers really raise, not hand-made ones: a server that resets every connection (a cut
// network, a failover), a port nobody listens on, and a working database given a wrong statement.
let db: TestDatabase;
let resetting: net.Server;
let resettingUrl: string;
let refusedUrl: string;
beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  resetting = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((r) => resetting.listen(0, "127.0.0.1", r));
  const url = new URL(db.url);
  url.host = `127.0.0.1:${(resetting.address() as net.AddressInfo).port}`;
  resettingUrl = url.toString();
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  url.host = `127.0.0.1:${(closed.address() as net.AddressInfo).port}`;
  refusedUrl = url.toString();
  await new Promise((r) => closed.close(r));
});
afterAll(async () => {
  await new Promise((r) => resetting?.close(r));
  await db?.drop();
});

describe("isDatabaseUnavailable (503 database_unavailable, not a 500)", () => {
  for (const [name, url] of [
    ["connection reset", () => resettingUrl],
    ["connection refused", () => refusedUrl],
  ] as const) {
    it(`${name}: raw pg, a Prisma model query and a Prisma raw query all count as unavailable`, async () => {
      const pool = createPool(url(), { connectionTimeoutMillis: 2_000 });
      const prisma: PrismaClient = createPrismaClient(url());
      try {
        expect(isDatabaseUnavailable(await rejectionOf(() => pool.query("SELECT 1")))).toBe(true);
        expect(isDatabaseUnavailable(await rejectionOf(() => prisma.apiKey.findFirst({ where: { prefix: "tk_x" } })))).toBe(true);
        expect(isDatabaseUnavailable(await rejectionOf(() => prisma.$queryRaw`SELECT 1`))).toBe(true);
      } finally {
        await pool.end();
        await prisma.$disconnect();
      }
    });
  }

  // What a write meets when it reaches a server that is not (or not yet) the primary: a standby HAProxy
  // still routes to, or a primary Patroni is restarting after a crash (it recovers read-only first). The
  // statement was refused before it changed anything; SQLSTATE 25006, here from a read-only session.
  it("a write refused by a read-only server (25006) counts as unavailable", async () => {
    const url = new URL(db.url);
    url.searchParams.set("options", "-c default_transaction_read_only=on");
    const pool = createPool(url.toString());
    const prisma = createPrismaClient(url.toString());
    try {
      const refused = await rejectionOf(() => pool.query("INSERT INTO shard_leases (shard) VALUES (999)"));
      expect((refused as { code?: string }).code).toBe("25006");
      expect(isDatabaseUnavailable(refused)).toBe(true);
      expect(isDatabaseUnavailable(await rejectionOf(() => prisma.shardLease.create({ data: { shard: 999 } })))).toBe(true);
      expect(isDatabaseUnavailable(await rejectionOf(() => prisma.$executeRaw`INSERT INTO shard_leases (shard) VALUES (999)`))).toBe(true);
    } finally {
      await pool.end();
      await prisma.$disconnect();
    }
  });

  it("a wrong statement on a working database is not (it is a bug: 500)", async () => {
    const pool = createPool(db.url);
    const prisma = createPrismaClient(db.url);
    try {
      expect(isDatabaseUnavailable(await rejectionOf(() => pool.query("SELECT * FROM no_such_table")))).toBe(false);
      expect(isDatabaseUnavailable(await rejectionOf(() => prisma.$queryRaw`SELECT * FROM no_such_table`))).toBe(false);
      expect(isDatabaseUnavailable(await rejectionOf(() => pool.query("SELECT 1/0")))).toBe(false);
    } finally {
      await pool.end();
      await prisma.$disconnect();
    }
  });
});
