import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { rejectionOf, startTcpProxy, type TcpProxy } from "@tick/testing";
import { createPool, createPrismaClient, isDatabaseUnavailable, type PrismaClient } from "./client.js";
import { CommitOutcomeUnknownError, isCommitOutcomeUnknown, prismaTransaction } from "./commit-outcome.js";
import { inTransaction } from "./in-transaction.js";
import { createTestDatabase, testServerUrl, type TestDatabase } from "./testing.js";

// The connection is lost at two different moments: during COMMIT (the server committed, the client never
// heard: outcome unknown) and before COMMIT (Postgres rolls back: nothing changed). Only the first may be
// reported as "may have happened".
let db: TestDatabase;
let proxy: TcpProxy;
let direct: pg.Pool;
let pool: pg.Pool;
let prisma: PrismaClient;
const isCommit = (chunk: Buffer) => chunk.includes("COMMIT");

beforeAll(async () => {
  db = await createTestDatabase(testServerUrl());
  const url = new URL(db.url);
  proxy = await startTcpProxy({ targetHost: url.hostname, targetPort: Number(url.port || 5432) });
  direct = createPool(db.url, { max: 2 });
  pool = createPool(proxy.url(db.url), { max: 2 });
  prisma = createPrismaClient(proxy.url(db.url), { max: 2 });
  await direct.query("CREATE TABLE commit_probe (label text PRIMARY KEY)");
});
afterAll(async () => {
  await prisma?.$disconnect();
  await pool?.end();
  await direct?.end();
  await proxy?.close();
  await db?.drop();
});

const exists = async (label: string) => (await direct.query("SELECT 1 FROM commit_probe WHERE label = $1", [label])).rowCount === 1;

describe("inTransaction and a lost connection", () => {
  it("during COMMIT: CommitOutcomeUnknownError, and the write did commit", async () => {
    const sprung = proxy.cutAfterRequest(isCommit);
    const err = await rejectionOf(() => inTransaction(pool, (c) => c.query("INSERT INTO commit_probe VALUES ('pg-commit')")));
    await sprung;
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(await exists("pg-commit")).toBe(true);
  });

  it("before COMMIT: an ordinary unavailable error (not unknown), and nothing was written", async () => {
    const err = await rejectionOf(() =>
      inTransaction(pool, async (c) => {
        await c.query("INSERT INTO commit_probe VALUES ('pg-before')");
        proxy.cut();
        await c.query("SELECT 1");
      }),
    );
    proxy.restore();
    expect(isCommitOutcomeUnknown(err)).toBe(false);
    expect(isDatabaseUnavailable(err)).toBe(true);
    expect(await exists("pg-before")).toBe(false);
  });

  it("a COMMIT the server refuses is a definite rollback, passed on as it is", async () => {
    await direct.query("CREATE TABLE commit_deferred (id int PRIMARY KEY, parent text REFERENCES commit_probe(label) DEFERRABLE INITIALLY DEFERRED)");
    const err = await rejectionOf(() => inTransaction(pool, (c) => c.query("INSERT INTO commit_deferred VALUES (1, 'no such parent')")));
    expect(isCommitOutcomeUnknown(err)).toBe(false);
    expect((err as { code?: string }).code).toBe("23503");
  });
});

describe("prismaTransaction and a lost connection", () => {
  it("during COMMIT: CommitOutcomeUnknownError, and the write did commit", async () => {
    const sprung = proxy.cutAfterRequest(isCommit);
    const err = await rejectionOf(() => prismaTransaction(prisma, (tx) => tx.$executeRaw`INSERT INTO commit_probe VALUES ('prisma-commit')`));
    await sprung;
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(await exists("prisma-commit")).toBe(true);
  });

  it("an error inside the body is passed on, and nothing was written", async () => {
    const err = await rejectionOf(() =>
      prismaTransaction(prisma, async (tx) => {
        await tx.$executeRaw`INSERT INTO commit_probe VALUES ('prisma-body')`;
        throw new Error("body failed");
      }),
    );
    expect(isCommitOutcomeUnknown(err)).toBe(false);
    expect((err as Error).message).toBe("body failed");
    expect(await exists("prisma-body")).toBe(false);
  });
});
