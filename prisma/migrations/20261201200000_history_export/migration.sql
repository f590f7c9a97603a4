-- Export before delete (issue #10): a tenant may ask that its history is not deleted by its own retention until
-- it has been exported. exported_through is the instant before which every finished job has been exported by a
-- complete export (NDJSON, GET /api/v1/jobs/export); retention deletes only history finished before it.
ALTER TABLE "tenants" ADD COLUMN "export_before_prune" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "exported_through" TIMESTAMPTZ(3);
