-- Webhooks API and console (issue #19): an endpoint's description, the last try's duration in the delivery log,
-- and test deliveries, which belong to no job (job_id NULL; the (job_id, event, url) key leaves them apart).
-- AlterTable
ALTER TABLE "webhook_deliveries" ADD COLUMN     "last_duration_ms" INTEGER,
ALTER COLUMN "job_id" DROP NOT NULL;

-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "description" TEXT;

