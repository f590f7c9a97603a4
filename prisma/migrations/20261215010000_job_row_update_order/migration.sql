-- The job row in the order its life changes it. A claim, a start and a completion each write a new version of
-- the row (none can be a HOT update: status is in the partial indexes' predicates). Postgres logs a version that
-- lands on the old one's page with only the bytes between the first and the last that differ, and one that moves
-- to another page in full. So what those three steps change (status, version, attempt count, fencing token,
-- current attempt, updated and finished times, error, result) goes together at the end of the row, and both tables
-- leave half of each page for the versions to come: a same-page version of a job logs about 55 bytes of row
-- instead of 360, and more of an attempt's updates stay HOT. A 10,000-job burn-down writes about 3,300 bytes of WAL
-- a job against 4,100.
--
-- Postgres cannot move a column, so the table is rebuilt: the copy holds an exclusive lock on jobs for about
-- 1.5 seconds per 100,000 rows in it (2-core machine). History keeps its column order (rewriting it would copy
-- every finished job); the move to history and the view over both name the columns.
LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE;

DROP VIEW history.jobs_all;
ALTER TABLE attempts DROP CONSTRAINT attempts_job_id_fkey;

CREATE TABLE jobs_in_update_order (
    -- Set when the job is created (or its debounce window folds a create into it); left alone afterwards.
    id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    queue_id uuid NOT NULL,
    shard integer NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    timeout_ms integer DEFAULT 30000 NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    due_at timestamp(3) with time zone NOT NULL,
    expires_at timestamp(3) with time zone,
    idempotency_expires_at timestamp(3) with time zone,
    occurrence_at timestamp(3) with time zone,
    schedule_id uuid,
    replay_id uuid,
    method text DEFAULT 'POST'::text NOT NULL,
    url text NOT NULL,
    headers jsonb DEFAULT '{}'::jsonb NOT NULL,
    body text,
    backoff jsonb DEFAULT '{"maxMs": 3600000, "baseMs": 1000, "jitter": "full", "strategy": "exponential"}'::jsonb NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    idempotency_key text,
    request_hash text,
    dependency_key text,
    callback_url text,
    flow_key text,
    debounce_key text,
    traceparent text DEFAULT public.new_traceparent(),
    tracestate text,
    cancel_requested_at timestamp(3) with time zone,
    -- Changed by the claim, the start and the completion: together, last.
    status job_status DEFAULT 'scheduled'::job_status NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    fencing_token bigint DEFAULT 0 NOT NULL,
    current_attempt_id uuid,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    finished_at timestamp(3) with time zone,
    last_error jsonb,
    result jsonb
)
WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02, fillfactor = 50);

INSERT INTO jobs_in_update_order (
    id, tenant_id, queue_id, shard, priority, timeout_ms, max_attempts, created_at, due_at, expires_at, idempotency_expires_at,
    occurrence_at, schedule_id, replay_id, method, url, headers, body, backoff, metadata, idempotency_key, request_hash,
    dependency_key, callback_url, flow_key, debounce_key, traceparent, tracestate, cancel_requested_at,
    status, version, attempt_count, fencing_token, current_attempt_id, updated_at, finished_at, last_error, result)
SELECT
    id, tenant_id, queue_id, shard, priority, timeout_ms, max_attempts, created_at, due_at, expires_at, idempotency_expires_at,
    occurrence_at, schedule_id, replay_id, method, url, headers, body, backoff, metadata, idempotency_key, request_hash,
    dependency_key, callback_url, flow_key, debounce_key, traceparent, tracestate, cancel_requested_at,
    status, version, attempt_count, fencing_token, current_attempt_id, updated_at, finished_at, last_error, result
  FROM jobs;

DROP TABLE jobs;
ALTER TABLE jobs_in_update_order RENAME TO jobs;

ALTER TABLE jobs ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);
CREATE INDEX jobs_dead_age_idx ON jobs (shard, finished_at) WHERE (status = 'dead'::job_status);
CREATE INDEX jobs_dead_idx ON jobs (tenant_id, finished_at DESC) WHERE (status = 'dead'::job_status);
CREATE INDEX jobs_due_idx ON jobs (shard, tenant_id, queue_id, priority DESC, due_at) WHERE ((status = 'scheduled'::job_status) AND (flow_key IS NULL));
CREATE INDEX jobs_expiry_idx ON jobs (shard, expires_at) WHERE ((expires_at IS NOT NULL) AND (status = ANY (ARRAY['scheduled'::job_status, 'dispatched'::job_status])));
CREATE INDEX jobs_finished_idx ON jobs (shard, finished_at) WHERE (status = ANY (ARRAY['succeeded'::job_status, 'cancelled'::job_status, 'expired'::job_status, 'rate_limited'::job_status]));
CREATE INDEX jobs_key_due_idx ON jobs (queue_id, flow_key, priority DESC, due_at) WHERE ((status = 'scheduled'::job_status) AND (flow_key IS NOT NULL));
CREATE INDEX jobs_key_live_idx ON jobs (queue_id, flow_key) WHERE ((flow_key IS NOT NULL) AND (status = ANY (ARRAY['dispatched'::job_status, 'running'::job_status])));
CREATE INDEX jobs_list_idx ON jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX jobs_live_idx ON jobs (shard, status, tenant_id, queue_id) WHERE (status = ANY (ARRAY['scheduled'::job_status, 'dispatched'::job_status, 'running'::job_status]));
CREATE INDEX jobs_next_due_idx ON jobs (shard, tenant_id, due_at) WHERE (status = 'scheduled'::job_status);
CREATE INDEX jobs_replay_idx ON jobs (replay_id) WHERE (replay_id IS NOT NULL);
CREATE UNIQUE INDEX jobs_schedule_id_occurrence_at_key ON jobs (schedule_id, occurrence_at) WHERE (schedule_id IS NOT NULL);

ALTER TABLE jobs ADD CONSTRAINT jobs_replay_id_fkey FOREIGN KEY (replay_id) REFERENCES dlq_replays(id) ON UPDATE CASCADE ON DELETE SET NULL;
ALTER TABLE jobs ADD CONSTRAINT jobs_tenant_id_queue_id_fkey FOREIGN KEY (tenant_id, queue_id) REFERENCES queues(tenant_id, id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE attempts ADD CONSTRAINT attempts_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs(id) ON UPDATE CASCADE ON DELETE CASCADE;

CREATE TRIGGER jobs_flow_key_in_flight AFTER UPDATE ON jobs REFERENCING OLD TABLE AS moved_old NEW TABLE AS moved_new FOR EACH STATEMENT EXECUTE FUNCTION flow_key_in_flight();
CREATE TRIGGER jobs_live_count_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS live_old FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_delete();
CREATE TRIGGER jobs_live_count_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_insert();
CREATE TRIGGER jobs_live_count_truncate AFTER TRUNCATE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_truncate();
CREATE TRIGGER jobs_live_count_update AFTER UPDATE ON jobs REFERENCING OLD TABLE AS live_old NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_update();
CREATE TRIGGER jobs_queue_flow_keyed AFTER INSERT ON jobs FOR EACH ROW WHEN ((new.flow_key IS NOT NULL)) EXECUTE FUNCTION queue_flow_keyed();

-- In history's column order.
CREATE VIEW history.jobs_all AS
  SELECT id, tenant_id, queue_id, shard, status, version, due_at, expires_at, priority, idempotency_key, request_hash,
         idempotency_expires_at, method, url, headers, body, timeout_ms, attempt_count, max_attempts, backoff, fencing_token,
         current_attempt_id, dependency_key, callback_url, metadata, last_error, result, schedule_id, occurrence_at, replay_id,
         cancel_requested_at, created_at, updated_at, finished_at, traceparent, tracestate, flow_key, debounce_key
    FROM public.jobs
  UNION ALL
  SELECT id, tenant_id, queue_id, shard, status, version, due_at, expires_at, priority, idempotency_key, request_hash,
         idempotency_expires_at, method, url, headers, body, timeout_ms, attempt_count, max_attempts, backoff, fencing_token,
         current_attempt_id, dependency_key, callback_url, metadata, last_error, result, schedule_id, occurrence_at, replay_id,
         cancel_requested_at, created_at, updated_at, finished_at, traceparent, tracestate, flow_key, debounce_key
    FROM history.jobs;
-- Room on the page for an attempt's HOT updates (start, lease renewals, end): at 60 a fifth of them moved to another
-- page (not HOT), at 50 an eighth.
ALTER TABLE attempts SET (fillfactor = 50);
