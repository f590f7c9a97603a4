-- DropForeignKey
ALTER TABLE "dlq_replay_items" DROP CONSTRAINT "dlq_replay_items_job_id_fkey";

-- DropIndex
DROP INDEX "jobs_tenant_id_idempotency_key_key";

-- AlterTable
ALTER TABLE "tenants" ADD COLUMN     "dlq_retention_days" INTEGER NOT NULL DEFAULT 30;

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "tenant_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "job_id" UUID NOT NULL,
    "request_hash" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("tenant_id","key")
);

-- CreateIndex
CREATE INDEX "idempotency_keys_expiry_idx" ON "idempotency_keys"("expires_at");

-- CreateIndex
CREATE INDEX "jobs_finished_idx" ON "jobs"("shard", "finished_at") WHERE (status = ANY (ARRAY['succeeded'::job_status, 'cancelled'::job_status, 'expired'::job_status]));

-- CreateIndex
CREATE INDEX "jobs_dead_age_idx" ON "jobs"("shard", "finished_at") WHERE (status = 'dead');

-- AddForeignKey
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;



-- Idempotency keys still inside their promised window move to their own table (the API's authority from
-- now on), so they keep holding after their job moves to history. Schedule occurrences are deduplicated
-- by (schedule_id, occurrence_at) and take no key here.
INSERT INTO "idempotency_keys" ("tenant_id", "key", "job_id", "request_hash", "expires_at", "created_at")
SELECT "tenant_id", "idempotency_key", "id", "request_hash", "idempotency_expires_at", "created_at"
  FROM "jobs"
 WHERE "idempotency_key" IS NOT NULL AND "schedule_id" IS NULL AND "idempotency_expires_at" > now()
ON CONFLICT DO NOTHING;

-- Table health: the hot tables are small and churn fast, so vacuum and analyze them after 2% of their
-- rows change rather than the default 20% (a queue table's dead tuples otherwise pile up between runs).
ALTER TABLE "jobs" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE "attempts" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE "outbox" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE "idempotency_keys" SET (autovacuum_vacuum_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05);

-- History (issue #10): finished jobs and their attempts leave the hot tables shortly after they finish
-- (the scheduler's maintenance loop moves them, fenced per shard) into tables partitioned by day of
-- finish, which retention drops whole. Apart in schema "history", outside what Prisma manages; the
-- maintenance loop creates the partitions ahead of time. Columns mirror the hot tables (a migration
-- that adds a column to jobs or attempts adds it here too).
CREATE SCHEMA IF NOT EXISTS history;

CREATE TABLE history.jobs (LIKE public.jobs INCLUDING DEFAULTS) PARTITION BY RANGE (finished_at);
CREATE INDEX jobs_id_idx ON history.jobs (id);
CREATE INDEX jobs_list_idx ON history.jobs (tenant_id, created_at DESC, id DESC);
CREATE INDEX jobs_retention_idx ON history.jobs (tenant_id, finished_at);

CREATE TABLE history.attempts (LIKE public.attempts INCLUDING DEFAULTS, job_finished_at TIMESTAMPTZ(3) NOT NULL)
  PARTITION BY RANGE (job_finished_at);
CREATE INDEX attempts_job_idx ON history.attempts (job_id);

-- Every job and every attempt, live or history: what reads that may meet a finished job use.
CREATE VIEW history.jobs_all AS
  SELECT * FROM public.jobs UNION ALL SELECT * FROM history.jobs;
CREATE VIEW history.attempts_all AS
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions
    FROM public.attempts
  UNION ALL
  SELECT id, job_id, tenant_id, number, fencing_token, job_version, shard_epoch, status, worker_id, lease_expires_at,
         heartbeat_at, dispatched_at, started_at, finished_at, outcome, http_status, error, duration_ms, late_completions
    FROM history.attempts;

-- One partition per UTC day of finish, for both tables: jobs_pYYYYMMDD, attempts_pYYYYMMDD. Idempotent;
-- returns how many partitions it created.
CREATE FUNCTION history.ensure_partitions(first_day date, days int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  d date;
  t text;
  part text;
  created int := 0;
BEGIN
  FOR i IN 0 .. days - 1 LOOP
    d := first_day + i;
    FOREACH t IN ARRAY ARRAY['jobs', 'attempts'] LOOP
      part := format('%s_p%s', t, to_char(d, 'YYYYMMDD'));
      IF to_regclass(format('history.%I', part)) IS NULL THEN
        EXECUTE format('CREATE TABLE IF NOT EXISTS history.%I PARTITION OF history.%I FOR VALUES FROM (%L) TO (%L)',
                       part, t, (d::timestamp AT TIME ZONE 'UTC'), ((d + 1)::timestamp AT TIME ZONE 'UTC'));
        created := created + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN created;
END $$;

-- Drops the day partitions that end at or before `cutoff` (whole days past every retention). Returns the
-- names dropped.
CREATE FUNCTION history.drop_partitions_before(cutoff timestamptz) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT c.relname
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
      JOIN pg_class p ON p.oid = i.inhparent
      JOIN pg_namespace n ON n.oid = p.relnamespace
     WHERE n.nspname = 'history' AND p.relname IN ('jobs', 'attempts') AND c.relname ~ '_p[0-9]{8}$'
       AND ((to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC') <= cutoff
     ORDER BY c.relname
  LOOP
    EXECUTE format('DROP TABLE history.%I', r.relname);
    RETURN NEXT r.relname;
  END LOOP;
END $$;
