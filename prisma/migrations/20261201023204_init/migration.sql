-- CreateEnum
CREATE TYPE "role" AS ENUM ('owner', 'admin', 'operator', 'viewer');

-- CreateEnum
CREATE TYPE "job_status" AS ENUM ('scheduled', 'dispatched', 'running', 'succeeded', 'dead', 'cancelled', 'expired');

-- CreateEnum
CREATE TYPE "attempt_status" AS ENUM ('pending', 'running', 'succeeded', 'failed', 'lease_expired', 'discarded');

-- CreateEnum
CREATE TYPE "outbox_kind" AS ENUM ('dispatch', 'webhook');

-- CreateEnum
CREATE TYPE "dst_gap_policy" AS ENUM ('shift_forward', 'skip');

-- CreateEnum
CREATE TYPE "dst_overlap_policy" AS ENUM ('first', 'last', 'both');

-- CreateEnum
CREATE TYPE "misfire_policy" AS ENUM ('skip', 'run_latest', 'catch_up');

-- CreateEnum
CREATE TYPE "replay_status" AS ENUM ('running', 'paused', 'auto_paused', 'cancelled', 'completed');

-- CreateEnum
CREATE TYPE "delivery_status" AS ENUM ('pending', 'delivered', 'failed');

-- CreateTable
CREATE TABLE "tenants" (
    "id" UUID NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "weight" INTEGER NOT NULL DEFAULT 1,
    "admission_rate" DOUBLE PRECISION NOT NULL DEFAULT 100,
    "admission_burst" INTEGER NOT NULL DEFAULT 1000,
    "max_pending_jobs" INTEGER NOT NULL DEFAULT 100000,
    "max_in_flight" INTEGER NOT NULL DEFAULT 100,
    "shard" INTEGER NOT NULL,
    "retention_days" INTEGER NOT NULL DEFAULT 7,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_by" TEXT,
    "last_used_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "users" (
    "id" UUID NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT,
    "password_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memberships" (
    "id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "role" "role" NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memberships_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "queues" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "concurrency" INTEGER,
    "rate_per_second" DOUBLE PRECISION,
    "default_max_attempts" INTEGER NOT NULL DEFAULT 5,
    "default_backoff" JSONB NOT NULL DEFAULT '{"strategy":"exponential","baseMs":1000,"maxMs":3600000,"jitter":"full"}',
    "default_timeout_ms" INTEGER NOT NULL DEFAULT 30000,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "queues_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "jobs" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "queue_id" UUID NOT NULL,
    "shard" INTEGER NOT NULL,
    "status" "job_status" NOT NULL DEFAULT 'scheduled',
    "version" INTEGER NOT NULL DEFAULT 1,
    "due_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3),
    "priority" INTEGER NOT NULL DEFAULT 0,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "idempotency_expires_at" TIMESTAMPTZ(3),
    "method" TEXT NOT NULL DEFAULT 'POST',
    "url" TEXT NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "body" TEXT,
    "timeout_ms" INTEGER NOT NULL DEFAULT 30000,
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "max_attempts" INTEGER NOT NULL DEFAULT 5,
    "backoff" JSONB NOT NULL DEFAULT '{"strategy":"exponential","baseMs":1000,"maxMs":3600000,"jitter":"full"}',
    "fencing_token" BIGINT NOT NULL DEFAULT 0,
    "current_attempt_id" UUID,
    "dependency_key" TEXT,
    "callback_url" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "last_error" JSONB,
    "result" JSONB,
    "schedule_id" UUID,
    "occurrence_at" TIMESTAMPTZ(3),
    "replay_id" UUID,
    "cancel_requested_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attempts" (
    "id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "number" INTEGER NOT NULL,
    "fencing_token" BIGINT NOT NULL,
    "job_version" INTEGER NOT NULL,
    "shard_epoch" BIGINT NOT NULL,
    "status" "attempt_status" NOT NULL DEFAULT 'pending',
    "worker_id" TEXT,
    "lease_expires_at" TIMESTAMPTZ(3),
    "heartbeat_at" TIMESTAMPTZ(3),
    "dispatched_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "outcome" TEXT,
    "http_status" INTEGER,
    "error" JSONB,
    "duration_ms" INTEGER,
    "late_completions" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox" (
    "id" BIGSERIAL NOT NULL,
    "kind" "outbox_kind" NOT NULL,
    "shard" INTEGER NOT NULL,
    "tenant_id" UUID NOT NULL,
    "job_id" UUID,
    "attempt_id" UUID,
    "payload" JSONB NOT NULL,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),
    "tries" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "schedules" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "queue_id" UUID NOT NULL,
    "shard" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL,
    "dst_gap_policy" "dst_gap_policy" NOT NULL DEFAULT 'shift_forward',
    "dst_overlap_policy" "dst_overlap_policy" NOT NULL DEFAULT 'first',
    "misfire_policy" "misfire_policy" NOT NULL DEFAULT 'skip',
    "max_catch_up" INTEGER NOT NULL DEFAULT 10,
    "misfire_threshold_ms" INTEGER NOT NULL DEFAULT 60000,
    "job_template" JSONB NOT NULL,
    "next_fire_at" TIMESTAMPTZ(3),
    "last_fire_at" TIMESTAMPTZ(3),
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "shard_leases" (
    "shard" INTEGER NOT NULL,
    "holder" TEXT,
    "epoch" BIGINT NOT NULL DEFAULT 0,
    "region" TEXT,
    "expires_at" TIMESTAMPTZ(3),
    "acquired_at" TIMESTAMPTZ(3),
    "renewed_at" TIMESTAMPTZ(3),
    "stale_writes_rejected" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "shard_leases_pkey" PRIMARY KEY ("shard")
);

-- CreateTable
CREATE TABLE "dlq_replays" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "actor" TEXT NOT NULL,
    "filter" JSONB NOT NULL,
    "rate_per_second" DOUBLE PRECISION NOT NULL,
    "status" "replay_status" NOT NULL DEFAULT 'running',
    "status_reason" TEXT,
    "failure_threshold" DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    "total" INTEGER NOT NULL,
    "released" INTEGER NOT NULL DEFAULT 0,
    "succeeded" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "dlq_replays_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_endpoints" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "events" TEXT[],
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "endpoint_id" UUID,
    "job_id" UUID NOT NULL,
    "event" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" "delivery_status" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_status" INTEGER,
    "last_error" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "tenant_id" UUID NOT NULL,
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT,
    "action" TEXT NOT NULL,
    "target_type" TEXT,
    "target_id" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tenants_slug_key" ON "tenants"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_prefix_key" ON "api_keys"("prefix");

-- CreateIndex
CREATE INDEX "api_keys_tenant_id_created_at_idx" ON "api_keys"("tenant_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "users_email_key" ON "users"("email");

-- CreateIndex
CREATE INDEX "memberships_tenant_id_idx" ON "memberships"("tenant_id");

-- CreateIndex
CREATE UNIQUE INDEX "memberships_user_id_tenant_id_key" ON "memberships"("user_id", "tenant_id");

-- CreateIndex
CREATE UNIQUE INDEX "queues_tenant_id_name_key" ON "queues"("tenant_id", "name");

-- CreateIndex
CREATE INDEX "jobs_due_idx" ON "jobs"("shard", "tenant_id", "priority" DESC, "due_at") WHERE (status = 'scheduled');

-- CreateIndex
CREATE INDEX "jobs_in_flight_idx" ON "jobs"("tenant_id", "queue_id") WHERE (status = ANY (ARRAY['dispatched'::job_status, 'running'::job_status]));

-- CreateIndex
CREATE INDEX "jobs_pending_idx" ON "jobs"("tenant_id") WHERE (status = ANY (ARRAY['scheduled'::job_status, 'dispatched'::job_status, 'running'::job_status]));

-- CreateIndex
CREATE INDEX "jobs_expiry_idx" ON "jobs"("expires_at") WHERE (expires_at IS NOT NULL) AND (status = ANY (ARRAY['scheduled'::job_status, 'dispatched'::job_status]));

-- CreateIndex
CREATE INDEX "jobs_list_idx" ON "jobs"("tenant_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "jobs_dead_idx" ON "jobs"("tenant_id", "finished_at" DESC) WHERE (status = 'dead');

-- CreateIndex
CREATE INDEX "jobs_replay_idx" ON "jobs"("replay_id") WHERE (replay_id IS NOT NULL);

-- CreateIndex
CREATE UNIQUE INDEX "jobs_tenant_id_idempotency_key_key" ON "jobs"("tenant_id", "idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "jobs_schedule_id_occurrence_at_key" ON "jobs"("schedule_id", "occurrence_at");

-- CreateIndex
CREATE INDEX "attempts_lease_idx" ON "attempts"("lease_expires_at") WHERE (status = 'running');

-- CreateIndex
CREATE INDEX "attempts_pending_idx" ON "attempts"("dispatched_at") WHERE (status = 'pending');

-- CreateIndex
CREATE UNIQUE INDEX "attempts_job_id_number_key" ON "attempts"("job_id", "number");

-- CreateIndex
CREATE UNIQUE INDEX "attempts_job_id_fencing_token_key" ON "attempts"("job_id", "fencing_token");

-- CreateIndex
CREATE INDEX "outbox_unpublished_idx" ON "outbox"("shard", "available_at") WHERE (published_at IS NULL);

-- CreateIndex
CREATE INDEX "schedules_due_idx" ON "schedules"("shard", "next_fire_at") WHERE (paused = false AND next_fire_at IS NOT NULL);

-- CreateIndex
CREATE UNIQUE INDEX "schedules_tenant_id_name_key" ON "schedules"("tenant_id", "name");

-- CreateIndex
CREATE INDEX "dlq_replays_tenant_id_created_at_idx" ON "dlq_replays"("tenant_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "webhook_endpoints_tenant_id_idx" ON "webhook_endpoints"("tenant_id");

-- CreateIndex
CREATE INDEX "deliveries_pending_idx" ON "webhook_deliveries"("next_attempt_at") WHERE (status = 'pending');

-- CreateIndex
CREATE INDEX "webhook_deliveries_tenant_id_created_at_idx" ON "webhook_deliveries"("tenant_id", "created_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_job_id_event_url_key" ON "webhook_deliveries"("job_id", "event", "url");

-- CreateIndex
CREATE INDEX "audit_log_tenant_id_created_at_idx" ON "audit_log"("tenant_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "audit_log_tenant_id_action_created_at_idx" ON "audit_log"("tenant_id", "action", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "queues" ADD CONSTRAINT "queues_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "schedules"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "jobs" ADD CONSTRAINT "jobs_replay_id_fkey" FOREIGN KEY ("replay_id") REFERENCES "dlq_replays"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "outbox" ADD CONSTRAINT "outbox_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedules" ADD CONSTRAINT "schedules_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "schedules" ADD CONSTRAINT "schedules_queue_id_fkey" FOREIGN KEY ("queue_id") REFERENCES "queues"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "dlq_replays" ADD CONSTRAINT "dlq_replays_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;
