-- CreateIndex
CREATE INDEX "jobs_next_due_idx" ON "jobs"("shard", "tenant_id", "due_at") WHERE (status = 'scheduled');
