-- Flow control inside a tenant's queue: a job may name a flow key (a customer, an account, an endpoint); a
-- queue may cap each key's attempts in flight and its dispatch rate, with per-key overrides, pauses and
-- weights; the claim shares a queue between its keys round-robin (sql/dispatch.ts). Debounce folds creates
-- with the same debounce key into one job.

-- AlterTable
ALTER TABLE "jobs" ADD COLUMN "flow_key" TEXT,
ADD COLUMN "debounce_key" TEXT;
-- History mirrors the hot table column for column (the move copies whole rows); the view over both takes them in.
ALTER TABLE "history"."jobs" ADD COLUMN "flow_key" TEXT,
ADD COLUMN "debounce_key" TEXT;
CREATE OR REPLACE VIEW history.jobs_all AS
  SELECT * FROM public.jobs UNION ALL SELECT * FROM history.jobs;

-- AlterTable
ALTER TABLE "queues" ADD COLUMN "per_key_concurrency" INTEGER,
ADD COLUMN "per_key_rate_limit" INTEGER,
ADD COLUMN "per_key_rate_period_ms" INTEGER,
ADD COLUMN "flow_keyed" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "idempotency_keys" ADD COLUMN "debounced" BOOLEAN NOT NULL DEFAULT false;

-- The due jobs without a key, per queue (the claim's plain path); keyed jobs have their own index, so a key's
-- backlog is never scanned past by the plain path and the key scan never reads jobs without a key.
-- DropIndex
DROP INDEX "jobs_due_idx";

-- CreateIndex
CREATE INDEX "jobs_due_idx" ON "jobs"("shard", "tenant_id", "queue_id", "priority" DESC, "due_at") WHERE (status = 'scheduled' AND flow_key IS NULL);

-- CreateIndex
CREATE INDEX "jobs_key_due_idx" ON "jobs"("queue_id", "flow_key", "priority" DESC, "due_at") WHERE (status = 'scheduled' AND flow_key IS NOT NULL);

-- CreateIndex
CREATE INDEX "jobs_key_live_idx" ON "jobs"("queue_id", "flow_key") WHERE (flow_key IS NOT NULL AND status = ANY (ARRAY['dispatched'::job_status, 'running'::job_status]));

-- CreateTable
CREATE TABLE "flow_keys" (
    "queue_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "in_flight" INTEGER NOT NULL DEFAULT 0,
    "concurrency" INTEGER,
    "rate_limit" INTEGER,
    "rate_period_ms" INTEGER,
    "weight" INTEGER,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "overridden_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "flow_keys_pkey" PRIMARY KEY ("queue_id","key")
);

-- CreateTable
CREATE TABLE "flow_key_buckets" (
    "queue_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "tokens" DOUBLE PRECISION NOT NULL,
    "tokens_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "flow_key_buckets_pkey" PRIMARY KEY ("queue_id","key")
);

-- CreateTable
CREATE TABLE "debounces" (
    "queue_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "tenant_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "mode" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "window_until" TIMESTAMPTZ(3) NOT NULL,
    "max_until" TIMESTAMPTZ(3),
    "creates" INTEGER NOT NULL DEFAULT 1,

    CONSTRAINT "debounces_pkey" PRIMARY KEY ("queue_id","key")
);

-- CreateIndex
CREATE INDEX "flow_keys_tenant_id_idx" ON "flow_keys"("tenant_id");

-- CreateIndex
CREATE INDEX "debounces_tenant_id_idx" ON "debounces"("tenant_id");

-- CreateIndex
CREATE INDEX "debounces_window_until_idx" ON "debounces"("window_until");

-- AddForeignKey
ALTER TABLE "flow_keys" ADD CONSTRAINT "flow_keys_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "flow_keys" ADD CONSTRAINT "flow_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "flow_key_buckets" ADD CONSTRAINT "flow_key_buckets_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "debounces" ADD CONSTRAINT "debounces_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "debounces" ADD CONSTRAINT "debounces_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A key's attempts in flight, kept by the database itself: every change of a keyed job's status in or out of
-- dispatched|running moves its key's count in the same transaction, whichever statement made it (the claim,
-- a completion, the reaper's settlement, a requeue, a cancel or expiry). A lease that ran out keeps its slot
-- until the reaper settles the attempt. Jobs without a key never fire it (the WHEN clause).
CREATE FUNCTION flow_key_in_flight() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was boolean := OLD.status IN ('dispatched', 'running');
  now_in boolean := NEW.status IN ('dispatched', 'running');
BEGIN
  IF now_in AND NOT was THEN
    INSERT INTO flow_keys (queue_id, key, tenant_id, in_flight) VALUES (NEW.queue_id, NEW.flow_key, NEW.tenant_id, 1)
    ON CONFLICT (queue_id, key) DO UPDATE SET in_flight = flow_keys.in_flight + 1;
  ELSIF was AND NOT now_in THEN
    UPDATE flow_keys SET in_flight = greatest(in_flight - 1, 0) WHERE queue_id = NEW.queue_id AND key = NEW.flow_key;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_flow_key_in_flight AFTER UPDATE OF status ON jobs
  FOR EACH ROW WHEN (NEW.flow_key IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION flow_key_in_flight();

-- A queue with keyed jobs is claimed through the key scan (roundFacts reads the flag); set by the first keyed
-- job, whichever path inserted it (the API, a schedule's occurrence, a replay).
CREATE FUNCTION queue_flow_keyed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE queues SET flow_keyed = true WHERE id = NEW.queue_id AND NOT flow_keyed;
  RETURN NULL;
END $$;

CREATE TRIGGER jobs_queue_flow_keyed AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.flow_key IS NOT NULL)
  EXECUTE FUNCTION queue_flow_keyed();
