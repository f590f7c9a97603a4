-- Dispatch without an outbox row (issue #18): the pending attempt is the durable dispatch record, and the
-- dispatcher publishes it right after the claim commits, several attempts per broker message. message_id is
-- the chunk message that carries the attempt (its broker ID is 'c-' || message_id), so the reaper can ask
-- the broker whether an unstarted attempt's message can still reach a worker. NULL: published through the
-- outbox under its own attempt ID (a re-publish, or a claim from before this migration).
ALTER TABLE "attempts" ADD COLUMN "message_id" UUID;
-- History mirrors the hot table (data lifecycle, #10): the column goes there too, after job_finished_at.
ALTER TABLE history.attempts ADD COLUMN message_id UUID;
CREATE OR REPLACE VIEW history.attempts_all AS
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions, message_id
    FROM public.attempts
  UNION ALL
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions, message_id
    FROM history.attempts;
