-- A job dropped by its flow key's rate (a queue whose perKeyRateMode is "drop") ends rate_limited. Its own
-- migration: a new enum value can be used only once the statement that added it has committed.
-- AlterEnum
ALTER TYPE "job_status" ADD VALUE 'rate_limited';
