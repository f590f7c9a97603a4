-- #18: one job per schedule occurrence, enforced only where there is a schedule. NULLs never conflicted,
-- so the rule is unchanged; a job no schedule made (most of them) no longer puts an entry in this index
-- on every one of its four versions. The new index is built before the old one goes, so the rule holds
-- throughout.
CREATE UNIQUE INDEX "jobs_schedule_occurrence_partial_key" ON "jobs"("schedule_id", "occurrence_at") WHERE schedule_id IS NOT NULL;
DROP INDEX "jobs_schedule_id_occurrence_at_key";
ALTER INDEX "jobs_schedule_occurrence_partial_key" RENAME TO "jobs_schedule_id_occurrence_at_key";
