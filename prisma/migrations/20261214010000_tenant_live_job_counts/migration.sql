-- A tenant's unfinished jobs (scheduled, dispatched, running) as a sum of signed counts, so the pending-job quota
-- that every create transaction checks costs the same whatever the tenant's backlog. Counting the live jobs
-- themselves read every one of them (an index-only scan whose entries visit the heap until the pages are
-- all-visible): about 0.3 ms per 1,000 live jobs, 30 ms at the default quota of 100,000.
--
-- The counts are appended, never updated: statement triggers on jobs add one row per tenant whose live jobs a
-- statement changed (+ for creates and replays, - for finishes, cancels, expiries and deletes), so concurrent
-- creates and completions never wait on a shared row. A tenant's count is the sum of its rows, read in the
-- reader's snapshot as the count of its jobs was; the scheduler's maintenance folds each tenant's rows into one
-- (sql.compactLiveJobCounts), which keeps a read to the rows of the last round.
CREATE TABLE "tenant_live_job_counts" (
    "shard" INTEGER NOT NULL,
    "tenant_id" UUID NOT NULL,
    "n" INTEGER NOT NULL
);

CREATE INDEX "tenant_live_job_counts_idx" ON "tenant_live_job_counts"("shard", "tenant_id");

CREATE FUNCTION jobs_live_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
  SELECT shard, tenant_id, count(*) FROM live_new WHERE status IN ('scheduled', 'dispatched', 'running') GROUP BY shard, tenant_id;
  RETURN NULL;
END $$;

CREATE FUNCTION jobs_live_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
  SELECT shard, tenant_id, sum(d) FROM (
    SELECT shard, tenant_id, 1 AS d FROM live_new WHERE status IN ('scheduled', 'dispatched', 'running')
    UNION ALL
    SELECT shard, tenant_id, -1 FROM live_old WHERE status IN ('scheduled', 'dispatched', 'running')
  ) moved
  GROUP BY shard, tenant_id HAVING sum(d) <> 0;
  RETURN NULL;
END $$;

CREATE FUNCTION jobs_live_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
  SELECT shard, tenant_id, -count(*) FROM live_old WHERE status IN ('scheduled', 'dispatched', 'running') GROUP BY shard, tenant_id;
  RETURN NULL;
END $$;

CREATE FUNCTION jobs_live_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tenant_live_job_counts;
  RETURN NULL;
END $$;

-- Creating the triggers locks jobs against writes until this migration commits, so the counts taken below and
-- the triggers' rows after it add up to the live jobs exactly.
CREATE TRIGGER jobs_live_count_insert AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_insert();
-- Every UPDATE of jobs: a trigger with transition tables can name no columns; it shares the transition rows
-- jobs_flow_key_in_flight collects, and a statement that finishes nothing (a claim, a start) writes nothing.
CREATE TRIGGER jobs_live_count_update AFTER UPDATE ON jobs
  REFERENCING OLD TABLE AS live_old NEW TABLE AS live_new FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_update();
CREATE TRIGGER jobs_live_count_delete AFTER DELETE ON jobs
  REFERENCING OLD TABLE AS live_old FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_delete();
CREATE TRIGGER jobs_live_count_truncate AFTER TRUNCATE ON jobs
  FOR EACH STATEMENT EXECUTE FUNCTION jobs_live_count_truncate();

INSERT INTO tenant_live_job_counts (shard, tenant_id, n)
SELECT shard, tenant_id, count(*) FROM jobs WHERE status IN ('scheduled', 'dispatched', 'running') GROUP BY shard, tenant_id;

-- Appended to and folded every second: vacuumed and analyzed after 2% of its rows change, as jobs is.
ALTER TABLE "tenant_live_job_counts" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

-- The flow keys' in-flight trigger returns at once from a statement that moves no keyed job (a queue without flow
-- keys, the usual burn-down), rather than joining its old and new rows to find none: about half of its 90 us a call.
CREATE OR REPLACE FUNCTION flow_key_in_flight() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM moved_new WHERE flow_key IS NOT NULL) THEN
    RETURN NULL;
  END IF;
  FOR d IN
    SELECT n.queue_id, n.flow_key AS key, n.tenant_id,
           sum(CASE WHEN n.status IN ('dispatched', 'running') THEN 1 ELSE 0 END
             - CASE WHEN o.status IN ('dispatched', 'running') THEN 1 ELSE 0 END)::int AS moved
      FROM moved_new n JOIN moved_old o ON o.id = n.id
     WHERE n.flow_key IS NOT NULL AND o.status IS DISTINCT FROM n.status
     GROUP BY n.queue_id, n.flow_key, n.tenant_id
    HAVING sum(CASE WHEN n.status IN ('dispatched', 'running') THEN 1 ELSE 0 END
             - CASE WHEN o.status IN ('dispatched', 'running') THEN 1 ELSE 0 END) <> 0
     ORDER BY n.queue_id, n.flow_key
  LOOP
    IF d.moved > 0 THEN
      INSERT INTO flow_keys (queue_id, key, tenant_id, in_flight) VALUES (d.queue_id, d.key, d.tenant_id, d.moved)
      ON CONFLICT (queue_id, key) DO UPDATE SET in_flight = flow_keys.in_flight + d.moved;
    ELSE
      UPDATE flow_keys SET in_flight = greatest(in_flight + d.moved, 0) WHERE queue_id = d.queue_id AND key = d.key;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
