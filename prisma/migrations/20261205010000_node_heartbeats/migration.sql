-- Status page (#21): each scheduler's and worker's heartbeat says what the console's operator status page shows
-- about it: its version, when it started, where its /readyz answers (the address the process registered itself;
-- the console fetches only these, never an address a user sends) and, for a scheduler, whether each shard it holds
-- finds due work through the Redis index or polls Postgres. Workers had no heartbeat; worker_nodes is upserted by
-- each worker every few seconds, off the hot path, and removed at a clean shutdown.
ALTER TABLE "scheduler_nodes" ADD COLUMN "version" TEXT,
ADD COLUMN "health_url" TEXT,
ADD COLUMN "started_at" TIMESTAMPTZ(3),
ADD COLUMN "due_index" JSONB;

-- CreateTable
CREATE TABLE "worker_nodes" (
    "id" TEXT NOT NULL,
    "region" TEXT,
    "version" TEXT,
    "health_url" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "worker_nodes_pkey" PRIMARY KEY ("id")
);
