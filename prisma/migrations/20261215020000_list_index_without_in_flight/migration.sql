-- The listing index leaves out jobs in flight (dispatched, running). Each new version of a job's row enters every
-- index it matches, and the claim and the start each write one: with them out, a job enters jobs_list_idx twice (as
-- created, as finished) instead of four times, about 200 bytes of WAL less a job. A tenant's jobs in flight are
-- few (at most its max_in_flight) and listed through jobs_live_idx (sql.listJobs reads both and merges them).
DROP INDEX jobs_list_idx;
CREATE INDEX jobs_list_idx ON jobs (tenant_id, created_at DESC, id DESC)
  WHERE (status = ANY (ARRAY['scheduled'::job_status, 'succeeded'::job_status, 'dead'::job_status, 'cancelled'::job_status, 'expired'::job_status, 'rate_limited'::job_status]));

-- More room on the page for an attempt's HOT updates: at 50 about one update in eight still moved to another page.
ALTER TABLE attempts SET (fillfactor = 35);
