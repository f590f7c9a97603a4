-- Queues and dependencies (issue #20). A queue's rate_per_second is enforced at dispatch: the claim statement
-- counts its claims into the queue's current one-second window (database clock), moving the window forward only.
-- AlterTable
ALTER TABLE "queues" ADD COLUMN     "rate_window_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "rate_window_start" TIMESTAMPTZ(3);

-- The claim reads each queue's due jobs apart, at most the queue's room (rate or concurrency), so the due index
-- leads with the queue: with the tenant-wide order, a capped queue's backlog was scanned past on every claim.
-- DropIndex
DROP INDEX "jobs_due_idx";

-- CreateIndex
CREATE INDEX "jobs_due_idx" ON "jobs"("shard", "tenant_id", "queue_id", "priority" DESC, "due_at") WHERE (status = 'scheduled');

-- A tenant's paused dependencies (S11 "pause the affected job class"): the claim holds their jobs, scheduled.
-- CreateTable
CREATE TABLE "dependency_pauses" (
    "tenant_id" UUID NOT NULL,
    "dependency_key" TEXT NOT NULL,
    "paused_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "paused_by_type" TEXT NOT NULL,
    "paused_by_id" TEXT,
    "reason" TEXT,

    CONSTRAINT "dependency_pauses_pkey" PRIMARY KEY ("tenant_id","dependency_key")
);

-- AddForeignKey
ALTER TABLE "dependency_pauses" ADD CONSTRAINT "dependency_pauses_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
