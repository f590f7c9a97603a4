import { generateApiKey, hashApiKey, parseApiKey } from "./api-keys.js";
import type { PrismaClient } from "./client.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import { shardForTenant } from "./shards.js";

export interface SeedDemoOptions {
  shardCount: number;
  email: string;
  password: string;
  /** Reuse this key (kept by the start script between runs) instead of minting a new one. */
  apiKey?: string;
}

export interface SeedDemoResult {
  tenantId: string;
  apiKey: string;
  email: string;
}

/**
 * Idempotent demo data: tenant "demo" with a default queue, an owner login and an API key with every
 * scope. Running it again changes nothing except storing the given key if it is new and resetting the
 * demo login's password to the given one.
 */
export async function seedDemo(prisma: PrismaClient, options: SeedDemoOptions): Promise<SeedDemoResult> {
  const existing = await prisma.tenant.findUnique({ where: { slug: "demo" } });
  const tenant =
    existing ??
    (await (async () => {
      const id = crypto.randomUUID();
      return prisma.tenant.create({
        data: { id, slug: "demo", name: "Demo tenant", shard: shardForTenant(id, options.shardCount) },
      });
    })());
  await prisma.queue.upsert({
    where: { tenantId_name: { tenantId: tenant.id, name: "default" } },
    create: { tenantId: tenant.id, name: "default" },
    update: {},
  });
  let user = await prisma.user.findUnique({ where: { email: options.email } });
  if (!user) {
    user = await prisma.user.create({
      data: { email: options.email, name: "Demo owner", passwordHash: await hashPassword(options.password) },
    });
  } else if (!user.passwordHash || !(await verifyPassword(options.password, user.passwordHash))) {
    // The login printed by `npm start` must work, even against a database seeded by another data folder.
    user = await prisma.user.update({ where: { id: user.id }, data: { passwordHash: await hashPassword(options.password) } });
  }
  await prisma.membership.upsert({
    where: { userId_tenantId: { userId: user.id, tenantId: tenant.id } },
    create: { userId: user.id, tenantId: tenant.id, role: "owner" },
    update: {},
  });

  const key = options.apiKey && parseApiKey(options.apiKey) ? options.apiKey : generateApiKey().key;
  const prefix = parseApiKey(key)!.prefix;
  const stored = await prisma.apiKey.findUnique({ where: { prefix } });
  if (!stored) {
    await prisma.apiKey.create({
      data: { tenantId: tenant.id, name: "demo", prefix, hash: hashApiKey(key), scopes: ["admin"], role: "owner", createdBy: "seed" },
    });
  }
  return { tenantId: tenant.id, apiKey: key, email: options.email };
}
