-- Hot path WAL (#18). pg_walinspect over a 10,000-job burn-down counted 27.5 index entries per job: every
-- version of a job row and of an attempt row went into every index, because each update changes `status`,
-- which partial-index predicates name, so none was HOT.
--
-- Attempts: the two partial indexes on status (lease expiry of running attempts, age of pending ones) go.
-- The reaper finds those attempts from the job side instead (the job's current attempt, through
-- jobs_live_idx by shard and status: at most what is in flight), so an attempt's indexes are its key and
-- its two unique constraints, none of which an update touches: starting, renewing and finishing an attempt
-- are HOT updates (fillfactor leaves the room on the page for them).
DROP INDEX "attempts_lease_idx";
DROP INDEX "attempts_pending_idx";
ALTER TABLE "attempts" SET (fillfactor = 60);

-- Jobs: jobs_in_flight_idx (tenant, queue; dispatched/running) and jobs_pending_idx (tenant; scheduled,
-- dispatched, running) become one index over live rows led by shard and status. Claiming and starting a
-- job add one entry to it instead of one to each; per-tenant counts give the tenant's shard (jobs.shard is
-- the tenant's, copied at creation) and the reaper scans a shard's running or dispatched jobs. Fillfactor
-- keeps room on the page so a job's next version usually stays there (a smaller WAL record for it).
DROP INDEX "jobs_in_flight_idx";
DROP INDEX "jobs_pending_idx";
CREATE INDEX "jobs_live_idx" ON "jobs"("shard", "status", "tenant_id", "queue_id") WHERE (status = ANY (ARRAY['scheduled'::job_status, 'dispatched'::job_status, 'running'::job_status]));
ALTER TABLE "jobs" SET (fillfactor = 80);
