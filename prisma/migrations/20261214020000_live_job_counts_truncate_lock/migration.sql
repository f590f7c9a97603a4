-- TRUNCATE of jobs empties tenant_live_job_counts, but a fold in flight (sql.compactLiveJobCounts: it deletes a
-- tenant's rows and inserts their sum in one statement) could commit its sum after the trigger's DELETE took its
-- snapshot, leaving a count for jobs that no longer exist. The trigger now waits out every writer of the table
-- first: SHARE ROW EXCLUSIVE conflicts with the folds' and the other triggers' ROW EXCLUSIVE, not with readers, and
-- no writer of jobs can be waiting for it (the TRUNCATE holds jobs exclusively).
CREATE OR REPLACE FUNCTION jobs_live_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE tenant_live_job_counts IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM tenant_live_job_counts;
  RETURN NULL;
END $$;

-- Folds empty most of the table's pages every round: a vacuum would then truncate the file under an ACCESS EXCLUSIVE
-- lock that every create and completion (their triggers insert here) would queue behind.
ALTER TABLE "tenant_live_job_counts" SET (vacuum_truncate = false);
