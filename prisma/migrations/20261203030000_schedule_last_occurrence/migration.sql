-- #20: a schedule's "last fire" is the latest occurrence that became a job, not the materialiser's cursor
-- (last_fire_at, which a new or changed schedule sets to its creation time though nothing fired).
ALTER TABLE "schedules" ADD COLUMN "last_occurrence_at" TIMESTAMPTZ(3);

UPDATE "schedules" s
   SET "last_occurrence_at" = (SELECT max(j.occurrence_at) FROM history.jobs_all j WHERE j.schedule_id = s.id AND j.tenant_id = s.tenant_id);
