import { createHash } from "node:crypto";

/**
 * The shard that owns a tenant's due-time decisions. Fixed when the tenant is created (stored on the
 * tenant and copied to its jobs and schedules), so changing the shard count later moves no work.
 */
export function shardForTenant(tenantId: string, shardCount: number): number {
  const digest = createHash("sha256").update(tenantId).digest();
  return digest.readUInt32BE(0) % shardCount;
}
