-- CreateTable
CREATE TABLE "scheduler_nodes" (
    "id" TEXT NOT NULL,
    "region" TEXT,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "scheduler_nodes_pkey" PRIMARY KEY ("id")
);
