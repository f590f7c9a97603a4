import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasScope } from "@tick/contract";
import { apiKeyMatches, parseApiKey } from "./api-keys.js";
import { createPrismaClient, type PrismaClient } from "./client.js";
import { verifyPassword } from "./passwords.js";
import { seedDemo } from "./seed.js";
import { createTestDatabase, testServerUrl, type TestDatabase } from "./testing.js";

describe("seedDemo", () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  beforeAll(async () => {
    db = await createTestDatabase(testServerUrl());
    prisma = createPrismaClient(db.url);
  }, 120_000);
  afterAll(async () => {
    await prisma?.$disconnect();
    await db?.drop();
  });

  it("creates a tenant, queue, owner login and a hashed API key, and is idempotent", async () => {
    const first = await seedDemo(prisma, { shardCount: 16, email: "demo@tick.local", password: "demo-password" });
    const again = await seedDemo(prisma, { shardCount: 16, email: "demo@tick.local", password: "demo-password", apiKey: first.apiKey });
    expect(again.tenantId).toBe(first.tenantId);
    expect(again.apiKey).toBe(first.apiKey);

    const keys = await prisma.apiKey.findMany();
    expect(keys).toHaveLength(1);
    expect(keys[0]!.hash).not.toContain(first.apiKey);
    expect(keys[0]!.prefix).toBe(parseApiKey(first.apiKey)!.prefix);
    expect(apiKeyMatches(first.apiKey, keys[0]!.hash)).toBe(true);
    expect(apiKeyMatches(first.apiKey + "x", keys[0]!.hash)).toBe(false);
    expect(hasScope(keys[0]!.scopes, "dlq:replay")).toBe(true);

    const tenant = await prisma.tenant.findUniqueOrThrow({ where: { slug: "demo" } });
    expect(tenant.shard).toBeGreaterThanOrEqual(0);
    expect(tenant.shard).toBeLessThan(16);
    expect(await prisma.queue.count({ where: { tenantId: tenant.id } })).toBe(1);

    const user = await prisma.user.findUniqueOrThrow({ where: { email: "demo@tick.local" }, include: { memberships: true } });
    expect(user.memberships.map((m) => m.role)).toEqual(["owner"]);
    expect(await verifyPassword("demo-password", user.passwordHash!)).toBe(true);
    expect(await verifyPassword("wrong", user.passwordHash!)).toBe(false);

    await seedDemo(prisma, { shardCount: 16, email: "demo@tick.local", password: "new-password", apiKey: first.apiKey });
    const updated = await prisma.user.findUniqueOrThrow({ where: { email: "demo@tick.local" } });
    expect(await verifyPassword("new-password", updated.passwordHash!)).toBe(true);
  });
});
