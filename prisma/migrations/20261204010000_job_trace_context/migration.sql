-- Traces (#21): each job keeps the W3C trace context it was created in, so every attempt's call to the target and
-- the completion webhook carry it (`traceparent`, `tracestate` headers) and a tenant can follow one job through its
-- own systems. traceparent is the version-00 header of the job's span (the console's "create job" span, or the
-- creating request's own when tracing is off): attempts are its children. Without one, the database starts a new
-- sampled trace (schedule occurrences, and jobs whose request sent none). Rows from before this migration keep
-- NULL: the worker then starts a trace per attempt. Adding a column with a volatile default would rewrite the
-- table, so the default is set apart: existing rows are not touched.
CREATE FUNCTION new_traceparent() RETURNS text LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT '00-' || encode(uuid_send(gen_random_uuid()), 'hex') || '-' || left(encode(uuid_send(gen_random_uuid()), 'hex'), 16) || '-01'
$$;

ALTER TABLE "jobs" ADD COLUMN "traceparent" TEXT,
ADD COLUMN "tracestate" TEXT;
ALTER TABLE "jobs" ALTER COLUMN "traceparent" SET DEFAULT new_traceparent();

-- History mirrors the hot table (data lifecycle, #10): the move copies whole rows, so the columns go there too, in
-- the same order, and the view over both is recreated to take them in.
ALTER TABLE history.jobs ADD COLUMN traceparent TEXT, ADD COLUMN tracestate TEXT;
CREATE OR REPLACE VIEW history.jobs_all AS
  SELECT * FROM public.jobs UNION ALL SELECT * FROM history.jobs;

-- A completion webhook carries its job's trace: copied when the delivery is created, so no try reads the job
-- (which may have moved to history by the time a retry goes out).
ALTER TABLE "webhook_deliveries" ADD COLUMN "traceparent" TEXT,
ADD COLUMN "tracestate" TEXT;
