-- The recurrence materialiser's cursor says what it is: occurrences up to this instant are decided
-- (created, skipped or coalesced). It is not the latest occurrence that became a job (last_occurrence_at,
-- the API's lastFireAt).
ALTER TABLE "schedules" RENAME COLUMN "last_fire_at" TO "materialized_through";
