import { AppError } from "@tick/core";
import type { z } from "zod";
import type { createQueueSchema, updateQueueSchema } from "@tick/contract";
import { prismaTransaction, sql } from "@tick/db";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { writeAudit } from "./audit";
import { queueView } from "./views";
import type { TenantServiceDeps } from "./tenant-service-deps";

/** The tenant's queues with their live figures (one grouped statement over its live jobs). */
export async function listQueues({ prisma, pool }: TenantServiceDeps, tenantId: string) {
  const [queues, stats] = await Promise.all([prisma.queue.findMany({ where: { tenantId }, orderBy: { name: "asc" } }), sql.queueStats(pool, tenantId)]);
  const byQueue = new Map(stats.map((s) => [s.queue_id, s]));
  return queues.map((q) => {
    const s = byQueue.get(q.id);
    return {
      ...queueView(q),
      stats: { due: s?.due ?? 0, scheduled: s?.scheduled ?? 0, inFlight: s?.in_flight ?? 0, oldestDueAgeMs: s?.oldest_due_age_ms ?? null },
    };
  });
}

export async function getQueue({ prisma }: TenantServiceDeps, tenantId: string, name: string) {
  const queue = await prisma.queue.findUnique({ where: { tenantId_name: { tenantId, name } } });
  if (!queue) throw new AppError("not_found", `No queue named "${name}".`);
  return queueView(queue);
}

export async function createQueue({ prisma }: TenantServiceDeps, principal: ApiPrincipal, input: z.output<typeof createQueueSchema>) {
  const tenantId = principal.tenant.id;
  return prismaTransaction(prisma, async (tx) => {
    const exists = await tx.queue.findUnique({ where: { tenantId_name: { tenantId, name: input.name } } });
    if (exists) throw new AppError("conflict", `A queue named "${input.name}" already exists.`);
    const queue = await tx.queue
      .create({
        data: {
          tenantId,
          name: input.name,
          concurrency: input.concurrency ?? null,
          ratePerSecond: input.ratePerSecond ?? null,
          ...(input.defaultMaxAttempts !== undefined ? { defaultMaxAttempts: input.defaultMaxAttempts } : {}),
          ...(input.defaultBackoff !== undefined ? { defaultBackoff: input.defaultBackoff } : {}),
          ...(input.defaultTimeoutMs !== undefined ? { defaultTimeoutMs: input.defaultTimeoutMs } : {}),
          ...keyLimitColumns(input),
        },
      })
      .catch((err: { code?: string }) => {
        // Two creates racing past the check above: the unique constraint decides.
        if (err.code === "P2002") throw new AppError("conflict", `A queue named "${input.name}" already exists.`);
        throw err;
      });
    await writeAudit(tx, { ...auditActor(principal), action: "queue.created", targetType: "queue", targetId: queue.id, details: { name: queue.name } });
    return queueView(queue);
  });
}

type QueueChange = z.output<typeof updateQueueSchema> | { paused: boolean };

/** The queue columns of the API's per-key limits (perKeyRate is two columns); absent fields are left out. */
function keyLimitColumns(input: Pick<z.output<typeof updateQueueSchema>, "perKeyConcurrency" | "perKeyRate" | "perKeyRateMode">) {
  return {
    ...(input.perKeyConcurrency !== undefined ? { perKeyConcurrency: input.perKeyConcurrency } : {}),
    ...(input.perKeyRateMode !== undefined ? { perKeyRateMode: input.perKeyRateMode } : {}),
    ...(input.perKeyRate !== undefined ? { perKeyRateLimit: input.perKeyRate?.limit ?? null, perKeyRatePeriodMs: input.perKeyRate?.periodMs ?? null } : {}),
  };
}

/** Changes a queue with a version bump (optimistic: a concurrent change is retried on the fresh row). */
export async function updateQueue({ prisma }: TenantServiceDeps, principal: ApiPrincipal, name: string, change: QueueChange, action: string) {
  const tenantId = principal.tenant.id;
  return prismaTransaction(prisma, async (tx) => {
    const current = await tx.queue.findUnique({ where: { tenantId_name: { tenantId, name } } });
    if (!current) throw new AppError("not_found", `No queue named "${name}".`);
    const { perKeyConcurrency, perKeyRate, perKeyRateMode, ...rest } = change as z.output<typeof updateQueueSchema>;
    const data = { ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)), ...keyLimitColumns({ perKeyConcurrency, perKeyRate, perKeyRateMode }) };
    const { count } = await tx.queue.updateMany({
      where: { id: current.id, version: current.version },
      data: { ...data, version: { increment: 1 } },
    });
    if (count === 0) throw new AppError("conflict", "The queue changed concurrently; retry.");
    const updated = await tx.queue.findUniqueOrThrow({ where: { id: current.id } });
    await writeAudit(tx, { ...auditActor(principal), action, targetType: "queue", targetId: current.id, details: { name, change: data } });
    return queueView(updated);
  });
}
