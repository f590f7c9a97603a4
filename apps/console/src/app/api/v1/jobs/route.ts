import { getTenantServiceDeps } from "@/server/api/deps";
import { createJob } from "@/server/api/create-job";
import { apiRoute } from "@/server/api/route";
import { listJobs } from "@/server/services/jobs";

export const dynamic = "force-dynamic";

// Requests with an API key reach the same pipeline before Next's router (server/direct-api.ts).
export const POST = apiRoute("createJob", createJob);

export const GET = apiRoute("listJobs", async ({ principal, query }) => ({
  status: 200,
  body: await listJobs(getTenantServiceDeps(), principal.tenant.id, query),
}));
