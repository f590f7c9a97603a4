-- A key's attempts in flight are moved once per statement and key, not once per job. A row trigger updated the
-- key's flow_keys row for every job that entered or left dispatched|running: a completion batch of 50 jobs of one
-- busy key wrote 50 versions of that one row, and a claim of 200 wrote 200. The row's dead versions piled up
-- faster than they could be pruned, every update walked them, and the key's claims and completions queued on its
-- row lock: a 50,000-job key drained at 1,500 jobs/s for ten seconds, then at 300. A statement trigger with
-- transition tables sums each statement's moves per key and writes each key's row once, in key order.
DROP TRIGGER jobs_flow_key_in_flight ON jobs;
DROP FUNCTION flow_key_in_flight();

CREATE FUNCTION flow_key_in_flight() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
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

-- Fired by every UPDATE of jobs (a trigger with transition tables cannot name columns or carry a WHEN clause);
-- a statement that moves no keyed job's status reads its transition rows and writes nothing.
CREATE TRIGGER jobs_flow_key_in_flight AFTER UPDATE ON jobs
  REFERENCING OLD TABLE AS moved_old NEW TABLE AS moved_new
  FOR EACH STATEMENT EXECUTE FUNCTION flow_key_in_flight();
