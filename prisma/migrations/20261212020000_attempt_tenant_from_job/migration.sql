-- An attempt's tenant is its job's: the claim copies it from the job it locks, and deleting a tenant deletes its
-- jobs, whose attempts go with them (attempts_job_id_fkey, ON DELETE CASCADE). Checking it against tenants on
-- every claimed job cost 10-14 µs of the claim's 70-90 µs a job (one client, 100-job claims, 2-core machine).
ALTER TABLE "attempts" DROP CONSTRAINT "attempts_tenant_id_fkey";
