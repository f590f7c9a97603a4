-- Per-minute rollups for the console's overview charts (issue #20). The scheduler's maintenance loop counts each
-- finished job once into job_minute_stats (moving its shard's rollup_watermarks mark forward in the same
-- transaction) and samples each queue's live figures once a minute into queue_minute_gauges; GET /api/v1/stats
-- reads them, so a page view costs rows of the window, never a scan of job history. Keyed by shard so schedulers
-- holding different shards never write one row; readers sum over shards. Nothing is inserted here: a shard's mark
-- starts at the first round that finds it missing.

-- CreateTable
CREATE TABLE "job_minute_stats" (
    "shard" INTEGER NOT NULL,
    "tenant_id" UUID NOT NULL,
    "minute" TIMESTAMPTZ(3) NOT NULL,
    "queue_id" UUID NOT NULL,
    "dependency_key" TEXT NOT NULL DEFAULT '',
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "dead" INTEGER NOT NULL DEFAULT 0,
    "cancelled" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,
    "lag_buckets" INTEGER[],

    CONSTRAINT "job_minute_stats_pkey" PRIMARY KEY ("tenant_id","minute","queue_id","dependency_key","shard")
);

-- CreateTable
CREATE TABLE "queue_minute_gauges" (
    "shard" INTEGER NOT NULL,
    "tenant_id" UUID NOT NULL,
    "minute" TIMESTAMPTZ(3) NOT NULL,
    "queue_id" UUID NOT NULL,
    "due" INTEGER NOT NULL,
    "waiting" INTEGER NOT NULL,
    "in_flight" INTEGER NOT NULL,
    "dead" INTEGER NOT NULL,
    "oldest_due_age_ms" BIGINT,

    CONSTRAINT "queue_minute_gauges_pkey" PRIMARY KEY ("tenant_id","minute","queue_id","shard")
);

-- CreateTable
CREATE TABLE "rollup_watermarks" (
    "shard" INTEGER NOT NULL,
    "through" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rollup_watermarks_pkey" PRIMARY KEY ("shard")
);

-- For the cascade when a queue is deleted.
-- CreateIndex
CREATE INDEX "job_minute_stats_queue_id_idx" ON "job_minute_stats"("queue_id");

-- CreateIndex
CREATE INDEX "queue_minute_gauges_queue_id_idx" ON "queue_minute_gauges"("queue_id");

-- AddForeignKey
ALTER TABLE "job_minute_stats" ADD CONSTRAINT "job_minute_stats_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "job_minute_stats" ADD CONSTRAINT "job_minute_stats_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queue_minute_gauges" ADD CONSTRAINT "queue_minute_gauges_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queue_minute_gauges" ADD CONSTRAINT "queue_minute_gauges_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE CASCADE ON UPDATE CASCADE;
