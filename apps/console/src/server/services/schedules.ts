import { AppError, dependencyOf, type Cidr } from "@tick/core";
import type { z } from "zod";
import type { createScheduleSchema, previewRuleSchema, updateScheduleSchema } from "@tick/contract";
import { prismaTransaction, sql, type PrismaClient } from "@tick/db";
import { nextOccurrences, validateRule, type Occurrence, type RecurrenceRule } from "@tick/recurrence";
import { auditActor, type ApiPrincipal } from "../api/authenticate";
import { invalidCursor } from "../api/keyset-cursor";
import { assertTargetAllowed } from "../api/target-guard";
import { writeAudit } from "./audit";
import type { TenantServiceDeps } from "./tenant-service-deps";

type ScheduleRecord = Awaited<ReturnType<PrismaClient["schedule"]["findFirstOrThrow"]>> & { queue: { name: string } };

function scheduleView(s: ScheduleRecord) {
  return {
    id: s.id,
    name: s.name,
    queue: s.queue.name,
    cron: s.cron,
    timezone: s.timezone,
    dstGapPolicy: s.dstGapPolicy,
    dstOverlapPolicy: s.dstOverlapPolicy,
    misfirePolicy: s.misfirePolicy,
    maxCatchUp: s.maxCatchUp,
    misfireThresholdMs: s.misfireThresholdMs,
    paused: s.paused,
    job: s.jobTemplate as Record<string, unknown>,
    // A paused schedule fires nothing: no next fire time to show. Resumed, it gets one again.
    nextFireAt: s.paused ? null : (s.nextFireAt?.toISOString() ?? null),
    // The latest occurrence that became a job; never the materialiser's cursor (a new schedule has none).
    lastFireAt: s.lastOccurrenceAt?.toISOString() ?? null,
    version: s.version,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

const offset = (minutes: number) => `${minutes < 0 ? "-" : "+"}${String(Math.floor(Math.abs(minutes) / 60)).padStart(2, "0")}:${String(Math.abs(minutes) % 60).padStart(2, "0")}`;

/** The local wall time at an instant, at a UTC offset: "2026-03-29T03:00:00". */
const wallTime = (at: Date, offsetMinutes: number) => new Date(at.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 19);

/**
 * `local` with `offset` gives `at` (the wall clock when it fires); `nominal` is the local time the rule
 * matched, which differs only where the DST policy moved the occurrence (a gap shifted forward).
 */
const occurrenceView = (o: Occurrence) => ({
  at: o.at.toISOString(),
  local: wallTime(o.at, o.offsetMinutes),
  nominal: o.nominal,
  offset: offset(o.offsetMinutes),
  ...(o.dst ? { dst: o.dst } : {}),
});

function checkRule(rule: Pick<RecurrenceRule, "cron" | "timezone">): void {
  const problems = validateRule(rule);
  if (problems.length) {
    throw new AppError("validation_failed", problems.join("; "), {
      extra: { errors: problems.map((p) => ({ path: p.split(":")[0]!, message: p.slice(p.indexOf(":") + 2) })) },
    });
  }
}

async function checkTemplate(job: { target: { url: string }; callbackUrl?: string }, allowed: readonly Cidr[]) {
  await assertTargetAllowed(job.target.url, "job.target.url", allowed);
  if (job.callbackUrl) await assertTargetAllowed(job.callbackUrl, "job.callbackUrl", allowed);
}

const first = (rule: RecurrenceRule, after: Date) => nextOccurrences(rule, after, 1)[0]?.at ?? null;

// createSchedule and changeSchedule read the database clock (`pool`): a schedule's first fire time and the
// materialiser's cursor (materializedThrough: occurrences up to it are decided, none before it will run) are
// compared with due times the scheduler reads from the database, so the console host's own clock must not
// set them (S13).

export async function createSchedule({ pool, prisma, allowedCidrs: allowed }: TenantServiceDeps, principal: ApiPrincipal, input: z.output<typeof createScheduleSchema>) {
  checkRule(input);
  await checkTemplate(input.job, allowed);
  const tenantId = principal.tenant.id;
  const queue = await prisma.queue.findUnique({ where: { tenantId_name: { tenantId, name: input.queue } } });
  if (!queue) throw new AppError("validation_failed", `Queue "${input.queue}" does not exist.`, { extra: { errors: [{ path: "queue", message: "no such queue" }] } });
  const now = await sql.databaseNow(pool);
  const rule = { cron: input.cron, timezone: input.timezone, dstGap: input.dstGapPolicy, dstOverlap: input.dstOverlapPolicy };
  return prismaTransaction(prisma, async (tx) => {
    if (await tx.schedule.findUnique({ where: { tenantId_name: { tenantId, name: input.name } } })) {
      throw new AppError("conflict", `A schedule named "${input.name}" already exists.`);
    }
    const created = await tx.schedule.create({
      data: {
        tenantId,
        queueId: queue.id,
        shard: principal.tenant.shard,
        name: input.name,
        cron: input.cron,
        timezone: input.timezone,
        dstGapPolicy: input.dstGapPolicy,
        dstOverlapPolicy: input.dstOverlapPolicy,
        misfirePolicy: input.misfirePolicy,
        maxCatchUp: input.maxCatchUp,
        misfireThresholdMs: input.misfireThresholdMs,
        paused: input.paused,
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- false positive: tsc rejects this value for Prisma's Json input type without the cast
        jobTemplate: { ...input.job, dependencyKey: dependencyOf(input.job.target.url, input.job.dependencyKey) } as object,
        nextFireAt: first(rule, now),
        materializedThrough: now,
      },
      include: { queue: { select: { name: true } } },
    });
    await writeAudit(tx, { ...auditActor(principal), action: "schedule.created", targetType: "schedule", targetId: created.id, details: { name: created.name, cron: created.cron, timezone: created.timezone } });
    return scheduleView(created);
  });
}

async function load(prisma: PrismaClient, tenantId: string, id: string) {
  const s = await prisma.schedule.findFirst({ where: { id, tenantId }, include: { queue: { select: { name: true } } } });
  if (!s) throw new AppError("not_found", "No such schedule.");
  return s;
}

export async function getSchedule({ prisma }: Pick<TenantServiceDeps, "prisma">, tenantId: string, id: string) {
  return scheduleView(await load(prisma, tenantId, id));
}

export async function listSchedules({ prisma }: TenantServiceDeps, tenantId: string, limit: number, cursor?: string) {
  const rows = await prisma.schedule.findMany({
    where: { tenantId },
    orderBy: { id: "asc" },
    take: limit + 1,
    ...(cursor ? { cursor: { id: cursor }, skip: 1 } : {}),
    include: { queue: { select: { name: true } } },
  }).catch((err) => {
    if (cursor) throw invalidCursor();
    throw err;
  });
  const page = rows.slice(0, limit);
  return { data: page.map(scheduleView), nextCursor: rows.length > limit ? page[page.length - 1]!.id : null };
}

/**
 * Rule changes and resumes start from now: occurrences from before the change (or while paused) are
 * not run. A version bump guards against a concurrent change.
 */
export async function changeSchedule(
  { pool, prisma, allowedCidrs: allowed }: TenantServiceDeps,
  principal: ApiPrincipal,
  id: string,
  change: z.output<typeof updateScheduleSchema> | { paused: boolean },
  action: string,
) {
  const current = await load(prisma, principal.tenant.id, id);
  const merged = {
    cron: "cron" in change && change.cron ? change.cron : current.cron,
    timezone: "timezone" in change && change.timezone ? change.timezone : current.timezone,
    dstGap: ("dstGapPolicy" in change && change.dstGapPolicy) || current.dstGapPolicy,
    dstOverlap: ("dstOverlapPolicy" in change && change.dstOverlapPolicy) || current.dstOverlapPolicy,
  };
  checkRule(merged);
  if ("job" in change && change.job) await checkTemplate(change.job, allowed);
  const now = await sql.databaseNow(pool);
  const { job, ...rest } = change as { job?: z.output<typeof updateScheduleSchema>["job"] } & Record<string, unknown>;
  // The change and its audit row commit together (prismaTransaction: a lost COMMIT is outcome_unknown).
  await prismaTransaction(prisma, async (tx) => {
    const { count } = await tx.schedule.updateMany({
      where: { id, tenantId: principal.tenant.id, version: current.version },
      data: {
        ...rest,
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- false positive: tsc rejects this value for Prisma's Json input type without the cast
        ...(job ? { jobTemplate: { ...job, dependencyKey: dependencyOf(job.target.url, job.dependencyKey) } as object } : {}),
        nextFireAt: first(merged, now),
        materializedThrough: now,
        version: { increment: 1 },
      },
    });
    if (count === 0) throw new AppError("conflict", "The schedule changed concurrently; retry.");
    await writeAudit(tx, { ...auditActor(principal), action, targetType: "schedule", targetId: id });
  });
  return getSchedule({ prisma }, principal.tenant.id, id);
}

export async function deleteSchedule({ prisma }: TenantServiceDeps, principal: ApiPrincipal, id: string) {
  const current = await load(prisma, principal.tenant.id, id);
  await prismaTransaction(prisma, async (tx) => {
    await tx.schedule.delete({ where: { id } });
    // Its live occurrence jobs stop naming it (they keep running; history keeps the id). After the delete, which
    // waited for any materialiser holding the row, so no occurrence it commits is missed.
    await tx.job.updateMany({ where: { tenantId: principal.tenant.id, scheduleId: id }, data: { scheduleId: null } });
    await writeAudit(tx, { ...auditActor(principal), action: "schedule.deleted", targetType: "schedule", targetId: id, details: { name: current.name } });
  });
  return scheduleView(current);
}

export async function previewSchedule({ prisma }: TenantServiceDeps, tenantId: string, id: string, count: number, after?: string) {
  const s = await load(prisma, tenantId, id);
  return previewRule({ cron: s.cron, timezone: s.timezone, dstGapPolicy: s.dstGapPolicy, dstOverlapPolicy: s.dstOverlapPolicy, count, ...(after ? { after } : {}) });
}

export function previewRule(input: z.output<typeof previewRuleSchema>) {
  checkRule(input);
  const rule = { cron: input.cron, timezone: input.timezone, dstGap: input.dstGapPolicy, dstOverlap: input.dstOverlapPolicy };
  return { occurrences: nextOccurrences(rule, input.after ? new Date(input.after) : new Date(), input.count).map(occurrenceView) };
}
