-- What a queue does with a flow key's due jobs beyond its rate: "delay" (they wait for tokens) or "drop" (they
-- end rate_limited, with a webhook).
-- AlterTable
ALTER TABLE "queues" ADD COLUMN "per_key_rate_mode" TEXT NOT NULL DEFAULT 'delay';

-- Rate-limited jobs are counted in the per-minute rollups and move to history like every finished job.
-- AlterTable
ALTER TABLE "job_minute_stats" ADD COLUMN "rate_limited" INTEGER NOT NULL DEFAULT 0;

-- DropIndex
DROP INDEX "jobs_finished_idx";

-- CreateIndex
CREATE INDEX "jobs_finished_idx" ON "jobs"("shard", "finished_at") WHERE (status = ANY (ARRAY['succeeded'::job_status, 'cancelled'::job_status, 'expired'::job_status, 'rate_limited'::job_status]));
