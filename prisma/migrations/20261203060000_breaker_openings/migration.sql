-- Breaker openings (issue #20's overview chart): the worker whose outcome opened a tenant's circuit breaker for a
-- dependency records it here, once per opening (the breaker's Lua script answers "opened" to exactly one caller),
-- so the console can chart openings over 1 h, 24 h and 7 d. Rare by nature (at most one row per breaker per open
-- period), written off the hot path; pruned with the tenant's rollups.

-- CreateTable
CREATE TABLE "breaker_openings" (
    "id" BIGSERIAL NOT NULL,
    "dependency_key" TEXT NOT NULL,
    "opened_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "open_until" TIMESTAMPTZ(3),
    "tenant_id" UUID NOT NULL,
    "job_id" UUID,

    CONSTRAINT "breaker_openings_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "breaker_openings_tenant_id_opened_at_idx" ON "breaker_openings"("tenant_id", "opened_at");

-- AddForeignKey
ALTER TABLE "breaker_openings" ADD CONSTRAINT "breaker_openings_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
