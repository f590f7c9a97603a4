-- When the claim made the attempt: dispatched_at moves with every re-publish (the reaper's stranded
-- timeout counts from it), so a flow key's token bucket, spent at the claim, is checked against this.
ALTER TABLE "attempts" ADD COLUMN "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;
-- History mirrors the hot table column for column (after job_finished_at and message_id, as message_id went).
ALTER TABLE history.attempts ADD COLUMN claimed_at TIMESTAMPTZ(3);
CREATE OR REPLACE VIEW history.attempts_all AS
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions, message_id,
         claimed_at
    FROM public.attempts
  UNION ALL
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions, message_id,
         claimed_at
    FROM history.attempts;
