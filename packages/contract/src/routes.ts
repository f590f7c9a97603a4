import { z } from "zod";
import type { ErrorCode } from "@tick/core";
import { uuid } from "./common.js";
import {
  batchCreateSchema,
  batchResultSchema,
  cancelResultSchema,
  createdJobSchema,
  createJobSchema,
  dlqPageSchema,
  dlqQuerySchema,
  jobPageSchema,
  jobDetailSchema,
  listJobsQuerySchema,
} from "./jobs.js";
import { apiKeySchema, createApiKeySchema, createdApiKeySchema } from "./keys.js";
import {
  acceptedInvitationSchema,
  acceptInvitationSchema,
  createdInvitationSchema,
  createInvitationSchema,
  invitationPreviewSchema,
  invitationSchema,
  memberListSchema,
  memberSchema,
  operatorTenantPageSchema,
  operatorTenantQuerySchema,
  operatorTenantSchema,
  signUpRequestedSchema,
  signUpResultSchema,
  signUpSchema,
  verifySignupSchema,
  suspendTenantSchema,
  updateMemberSchema,
  updateTenantLimitsSchema,
} from "./accounts.js";
import { createQueueSchema, queueNameSchema, queueSchema, queueWithStatsSchema, updateQueueSchema } from "./queues.js";
import { flowKeyListSchema, flowKeySchema, flowKeyStateSchema, listFlowKeysQuerySchema, putFlowKeySchema } from "./flow-keys.js";
import { dependencyKeySchema, dependencyListSchema, dependencySchema, pauseDependencySchema } from "./dependencies.js";
import {
  createWebhookEndpointSchema,
  redeliverResultSchema,
  redeliverSchema,
  rotateSecretSchema,
  signingSecretListSchema,
  updateWebhookEndpointSchema,
  webhookDeliveryPageSchema,
  webhookDeliveryQuerySchema,
  webhookDeliverySchema,
  webhookEndpointListSchema,
  webhookEndpointSchema,
} from "./webhooks.js";
import { auditPageSchema, auditQuerySchema } from "./audit.js";
import { platformStatusSchema } from "./platform-status.js";
import { accountSessionListSchema, changePasswordSchema, endedSessionsSchema, passwordChangedSchema } from "./account.js";
import { createReplaySchema, replayListQuerySchema, replayPageSchema, replayPreviewSchema, replaySchema } from "./dlq.js";
import { createScheduleSchema, previewQuerySchema, previewRuleSchema, previewSchema, schedulePageSchema, scheduleSchema, updateScheduleSchema } from "./schedules.js";
import type { ApiKeyScope } from "./scopes.js";
import { statsQuerySchema, statsSchema } from "./stats.js";
import { exportJobsQuerySchema, jobExportLineSchema, tenantSettingsSchema, updateTenantSettingsSchema } from "./lifecycle.js";

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  /** Default application/json. application/x-ndjson: `schema` describes one line. */
  contentType?: "application/json" | "application/x-ndjson";
}

/** One operation of the public API: the route handler, the OpenAPI document and the client all read this. */
export interface RouteDef {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** Under /api/v1, with {param} placeholders. */
  path: string;
  summary: string;
  description?: string;
  /**
   * The scope an API key (or a console role) needs; `platform`: a platform operator's console session only
   * (the people running the SaaS, not a tenant role); `account`: the signed-in person's own console session
   * only (their sessions and password; no tenant, never an API key); null: a public operation, no credentials (sign-up).
   */
  scope: ApiKeyScope | "platform" | "account" | null;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Accepts an Idempotency-Key header. */
  idempotent?: boolean;
  responses: Record<number, RouteResponse>;
  /** Problem codes this operation may answer besides the ones every operation may (auth, rate, 5xx). */
  errors: ErrorCode[];
}

const idParams = z.object({ id: uuid });
const queueParams = z.object({ name: queueNameSchema });
const flowKeyParams = z.object({ name: queueNameSchema, key: flowKeySchema });
const keyList = z.object({ data: z.array(apiKeySchema) }).meta({ id: "ApiKeyList" });
const queueList = z.object({ data: z.array(queueWithStatsSchema) }).meta({ id: "QueueList" });
const dependencyParams = z.object({ key: dependencyKeySchema });

export const routes = {
  createJob: {
    method: "post",
    path: "/jobs",
    summary: "Create a job",
    description:
      "201 means the job is durably committed. With an Idempotency-Key, repeating the same request returns the " +
      "original job (200, header Idempotent-Replayed: true); the same key with a different body is refused (422). " +
      "503 means nothing was created: retry with the same key. With `debounce`, a create that an open window of its " +
      "queue and debounce key absorbs answers 200 with that job and `debouncedInto` (docs/api.md \"Debounce\").",
    scope: "jobs:write",
    body: createJobSchema,
    idempotent: true,
    responses: {
      201: { description: "Created", schema: createdJobSchema },
      200: { description: "Idempotent replay, or a debounced create folded into an existing job (`debouncedInto`)", schema: createdJobSchema },
    },
    errors: ["bad_request", "validation_failed", "target_not_allowed", "idempotency_key_reused", "payload_too_large", "quota_exceeded", "not_found"],
  },
  createJobsBatch: {
    method: "post",
    path: "/jobs/batch",
    summary: "Create up to 1,000 jobs",
    description: "Each item is created (or replayed, with its own idempotencyKey) independently; results come per item, in order.",
    scope: "jobs:write",
    body: batchCreateSchema,
    responses: { 200: { description: "Per-item results", schema: batchResultSchema } },
    errors: ["bad_request", "validation_failed", "payload_too_large"],
  },
  listJobs: {
    method: "get",
    path: "/jobs",
    summary: "List jobs, newest first",
    scope: "jobs:read",
    query: listJobsQuerySchema,
    responses: { 200: { description: "A page of jobs", schema: jobPageSchema } },
    errors: ["validation_failed"],
  },
  getJob: {
    method: "get",
    path: "/jobs/{id}",
    summary: "Get a job with its attempts",
    scope: "jobs:read",
    params: idParams,
    responses: { 200: { description: "The job", schema: jobDetailSchema } },
    errors: ["not_found", "validation_failed"],
  },
  exportJobs: {
    method: "get",
    path: "/jobs/export",
    summary: "Export finished jobs as NDJSON (read only)",
    description:
      "Streams the tenant's finished jobs (succeeded, cancelled, expired, dead) with their attempts, oldest finish " +
      "first, one JSON object per line, whether they are still in the hot tables or already in history; the last line " +
      "is `{\"type\":\"end\", ...}`, and a stream without it was cut off. A GET changes nothing: the end line's " +
      "`exportedThrough` is the tenant's mark as it stands. To record a complete export (and let retention with " +
      "`exportBeforePrune` delete what it covers), use `POST /jobs/export`.",
    scope: "jobs:read",
    query: exportJobsQuerySchema,
    responses: { 200: { description: "NDJSON, one JobExportLine per line", schema: jobExportLineSchema, contentType: "application/x-ndjson" } },
    errors: ["validation_failed"],
  },
  exportJobsAndMark: {
    method: "post",
    path: "/jobs/export",
    summary: "Export finished jobs as NDJSON and record the export",
    description:
      "The same stream as `GET /jobs/export` (`from` and `to` in the query; no body), and a complete export that starts " +
      "at the beginning or at the tenant's `exportedThrough` moves that mark up to `to` (audited as `jobs.exported`) " +
      "once the last job is sent; with `exportBeforePrune` set, retention deletes only history finished before the " +
      "mark. A stream cut off before its end line moves nothing. A POST, so a link on another site cannot move it; " +
      "from the console it is a form post from the console's own origin.",
    scope: "jobs:read",
    query: exportJobsQuerySchema,
    responses: { 200: { description: "NDJSON, one JobExportLine per line", schema: jobExportLineSchema, contentType: "application/x-ndjson" } },
    errors: ["validation_failed"],
  },
  cancelJob: {
    method: "post",
    path: "/jobs/{id}/cancel",
    summary: "Cancel a job",
    description:
      "200 `cancelled`: no attempt ever started and none will. 200 `cancelled_after_attempts`: none will start from " +
      "now on, but `attemptsStarted` earlier attempts did (the job was waiting for a retry): their effects may have " +
      "happened. 202 `running`: an attempt is executing; it may still complete and its side effect may already have " +
      "happened, but no further attempt will be made. Cancelling an already cancelled job answers the same again with " +
      "`repeated: true`. 409: the job had finished otherwise (succeeded, dead, expired). 503 `outcome-unknown`: the " +
      "connection was lost while the cancel committed; repeat the request to learn the outcome.",
    scope: "jobs:write",
    params: idParams,
    responses: {
      200: { description: "Cancelled: `cancelled` (never started) or `cancelled_after_attempts` (earlier attempts started); `repeated` when it already was", schema: cancelResultSchema },
      202: { description: "Running: cancel recorded, the current attempt may still complete", schema: cancelResultSchema },
    },
    errors: ["not_found", "conflict", "validation_failed"],
  },
  listQueues: {
    method: "get",
    path: "/queues",
    summary: "List queues, with their live figures",
    description:
      "Each queue with `stats`: jobs due now, scheduled (due or not), in flight (dispatched or running), and how long " +
      "the oldest due job has waited past its due time by the database clock.",
    scope: "queues:read",
    responses: { 200: { description: "All queues of the tenant", schema: queueList } },
    errors: [],
  },
  createQueue: {
    method: "post",
    path: "/queues",
    summary: "Create a queue",
    scope: "queues:write",
    body: createQueueSchema,
    responses: { 201: { description: "Created", schema: queueSchema } },
    errors: ["bad_request", "validation_failed", "conflict"],
  },
  getQueue: {
    method: "get",
    path: "/queues/{name}",
    summary: "Get a queue",
    scope: "queues:read",
    params: queueParams,
    responses: { 200: { description: "The queue", schema: queueSchema } },
    errors: ["not_found", "validation_failed"],
  },
  updateQueue: {
    method: "patch",
    path: "/queues/{name}",
    summary: "Change a queue's concurrency, rate or retry defaults",
    scope: "queues:write",
    params: queueParams,
    body: updateQueueSchema,
    responses: { 200: { description: "Updated", schema: queueSchema } },
    errors: ["bad_request", "not_found", "validation_failed"],
  },
  pauseQueue: {
    method: "post",
    path: "/queues/{name}/pause",
    summary: "Pause a queue (its due jobs wait; other queues keep running)",
    scope: "queues:write",
    params: queueParams,
    responses: { 200: { description: "Paused", schema: queueSchema } },
    errors: ["not_found", "validation_failed"],
  },
  resumeQueue: {
    method: "post",
    path: "/queues/{name}/resume",
    summary: "Resume a paused queue",
    scope: "queues:write",
    params: queueParams,
    responses: { 200: { description: "Resumed", schema: queueSchema } },
    errors: ["not_found", "validation_failed"],
  },
  listFlowKeys: {
    method: "get",
    path: "/queues/{name}/keys",
    summary: "The queue's top flow keys: backlog, in flight, held, paused, overridden",
    description:
      "The keys of the queue with work (scheduled or in flight) or an override, with their live figures and the limits in " +
      "force, the top `limit` by `sort`; `totals` counts every key with work, every key held at its cap and every paused key.",
    scope: "queues:read",
    params: queueParams,
    query: listFlowKeysQuerySchema,
    responses: { 200: { description: "The top keys", schema: flowKeyListSchema } },
    errors: ["not_found", "validation_failed"],
  },
  getFlowKey: {
    method: "get",
    path: "/queues/{name}/keys/{key}",
    summary: "One flow key of a queue: its figures, limits and override",
    description: "Any key can be read (one with no job and no override reads as zeros under the queue's limits). URL-encode the key.",
    scope: "queues:read",
    params: flowKeyParams,
    responses: { 200: { description: "The key", schema: flowKeyStateSchema } },
    errors: ["not_found", "validation_failed"],
  },
  putFlowKey: {
    method: "put",
    path: "/queues/{name}/keys/{key}",
    summary: "Override one flow key's concurrency, rate or weight, or pause it",
    description:
      "Sets the given fields of the key's override (others keep their value; null returns a field to the queue's). " +
      "`paused: true` holds the key's jobs, scheduled; `paused: false` releases them through the claim's usual pacing.",
    scope: "queues:write",
    params: flowKeyParams,
    body: putFlowKeySchema,
    responses: { 200: { description: "The key with its override", schema: flowKeyStateSchema } },
    errors: ["bad_request", "not_found", "validation_failed"],
  },
  deleteFlowKey: {
    method: "delete",
    path: "/queues/{name}/keys/{key}",
    summary: "Return a flow key to the queue's limits (removes its override and resumes it)",
    scope: "queues:write",
    params: flowKeyParams,
    responses: { 200: { description: "The key under the queue's limits", schema: flowKeyStateSchema } },
    errors: ["not_found", "validation_failed"],
  },
  listDependencies: {
    method: "get",
    path: "/dependencies",
    summary: "The dependencies the tenant's jobs call, with their circuit breakers and pauses",
    description:
      "Every distinct `dependencyKey` among the tenant's scheduled, dispatched and running jobs, and every dependency " +
      "it paused, by key: whether it is paused, its circuit breaker (shared by every tenant calling that dependency) " +
      "and the tenant's jobs of it due now and in flight.",
    scope: "queues:read",
    responses: { 200: { description: "The tenant's dependencies", schema: dependencyListSchema } },
    errors: [],
  },
  pauseDependency: {
    method: "post",
    path: "/dependencies/{key}/pause",
    summary: "Pause the tenant's jobs of one dependency (they wait, scheduled; the rest of their queues keep running)",
    description:
      "The key is URL-encoded in the path. Allowed for a dependency with no jobs yet. Pausing a paused dependency " +
      "changes nothing and keeps its first pause. The change is audited (`dependency.paused`). A key longer than 200 " +
      "characters names no dependency (404).",
    scope: "queues:write",
    params: dependencyParams,
    body: pauseDependencySchema,
    responses: { 200: { description: "The dependency, paused", schema: dependencySchema } },
    errors: ["bad_request", "validation_failed", "not_found"],
  },
  resumeDependency: {
    method: "post",
    path: "/dependencies/{key}/resume",
    summary: "Resume the tenant's jobs of a paused dependency",
    description:
      "The key is URL-encoded in the path. Resuming a dependency that is not paused changes nothing. The change is " +
      "audited (`dependency.resumed`). A key longer than 200 characters names no dependency (404).",
    scope: "queues:write",
    params: dependencyParams,
    responses: { 200: { description: "The dependency, resumed", schema: dependencySchema } },
    errors: ["not_found"],
  },
  signUp: {
    method: "post",
    path: "/signup",
    summary: "Sign up: mail a link that creates a tenant, its owner and a first API key",
    description:
      "Public (no credentials). Answers 202 with the same body for every email, whether an account has it or not, " +
      "and mails a single-use link (`/signup/verify#token=…`, valid for TICK_SIGNUP_TTL) to the address: a new " +
      "address confirms to create its tenant; an address with an account is told someone asked to add a tenant " +
      "with it. Nothing is created until the link is confirmed (`POST /signup/verify`). A password that is too " +
      "easy to guess is 422, a taken tenant ID 409 (neither depends on the email). Allowed when the deployment's " +
      "TICK_SIGNUP is `open`; otherwise 403 `signup_closed`. Rate limited per client address and per email (429).",
    scope: null,
    body: signUpSchema,
    responses: { 202: { description: "The confirmation link was mailed (the same answer for every email)", schema: signUpRequestedSchema } },
    errors: ["signup_closed", "conflict", "validation_failed"],
  },
  verifySignup: {
    method: "post",
    path: "/signup/verify",
    summary: "Confirm a sign-up: create the tenant, its owner and a first API key",
    description:
      "Public. The token from the mailed link, in the body (never in a URL the server logs). Creates, in one " +
      "transaction with its audit rows, the tenant with its default queue, its owner (the email's account if it " +
      "has one, which keeps its password; else a new account with the password given at sign-up) and an API key " +
      "with scope admin and role owner, returned once. Single use: a used, expired or unknown token is 404; a " +
      "tenant ID taken since the sign-up is 409. Rate limited per client address (429).",
    scope: null,
    body: verifySignupSchema,
    responses: { 201: { description: "Created; `firstKey.key` is shown only now", schema: signUpResultSchema } },
    errors: ["signup_closed", "not_found", "conflict", "validation_failed"],
  },
  listMembers: {
    method: "get",
    path: "/members",
    summary: "List the tenant's members and its invitations",
    scope: "members:read",
    responses: { 200: { description: "Members, oldest first, and every invitation, newest first", schema: memberListSchema } },
    errors: [],
  },
  inviteMember: {
    method: "post",
    path: "/invitations",
    summary: "Invite someone by email with a role",
    description:
      "Returns the invitation link once (its token is stored hashed; single use; expires after TICK_INVITATION_TTL). " +
      "When SMTP_URL is set the link is emailed too. Only an owner may invite an owner.",
    scope: "members:write",
    body: createInvitationSchema,
    responses: { 201: { description: "Invited; `acceptUrl` is shown only now", schema: createdInvitationSchema } },
    errors: ["conflict", "validation_failed"],
  },
  revokeInvitation: {
    method: "post",
    path: "/invitations/{id}/revoke",
    summary: "Revoke a pending invitation",
    scope: "members:write",
    params: idParams,
    responses: { 200: { description: "Revoked (or already no longer pending)", schema: invitationSchema } },
    errors: ["not_found"],
  },
  updateMember: {
    method: "patch",
    path: "/members/{id}",
    summary: "Change a member's role",
    description: "Only an owner may make or unmake an owner; the last owner cannot be demoted (409).",
    scope: "members:write",
    params: idParams,
    body: updateMemberSchema,
    responses: { 200: { description: "The member with the new role", schema: memberSchema } },
    errors: ["not_found", "conflict", "validation_failed"],
  },
  removeMember: {
    method: "delete",
    path: "/members/{id}",
    summary: "Remove a member from the tenant, or leave it",
    description:
      "Their console session loses the tenant on its next request. Removing someone else needs members:write; any " +
      "member may remove themselves (leave). Only an owner may remove an owner; the last owner cannot be removed or leave (409).",
    scope: "members:read",
    params: idParams,
    responses: { 200: { description: "Removed: the member as they were", schema: memberSchema } },
    errors: ["not_found", "conflict"],
  },
  previewInvitation: {
    method: "post",
    path: "/invitations/preview",
    summary: "What an invitation token is for (public)",
    description: "The tenant, email and role an invitation link grants, before accepting it. The token goes in the body, never in a URL the server logs.",
    scope: null,
    body: z.object({ token: z.string().min(20).max(200) }).meta({ id: "InvitationToken" }),
    responses: { 200: { description: "A pending invitation", schema: invitationPreviewSchema } },
    errors: ["not_found", "validation_failed"],
  },
  acceptInvitation: {
    method: "post",
    path: "/invitations/accept",
    summary: "Accept an invitation (public)",
    description:
      "Joins the tenant with the invited role: creates the account with this password if the email has none (unless " +
      "TICK_SIGNUP is closed), or proves the existing account with its password. Single use; 404 once used, revoked or expired.",
    scope: null,
    body: acceptInvitationSchema,
    responses: { 200: { description: "Joined", schema: acceptedInvitationSchema } },
    errors: ["not_found", "conflict", "validation_failed", "signup_closed"],
  },
  operatorListTenants: {
    method: "get",
    path: "/operator/tenants",
    summary: "List tenants with their limits and state (platform operators)",
    scope: "platform",
    query: operatorTenantQuerySchema,
    responses: { 200: { description: "Tenants by slug; pass nextCursor back as cursor", schema: operatorTenantPageSchema } },
    errors: ["bad_request", "validation_failed"],
  },
  operatorUpdateTenant: {
    method: "patch",
    path: "/operator/tenants/{id}",
    summary: "Set a tenant's weight, admission rate and burst, pending-job quota and in-flight cap (platform operators)",
    description: "Takes effect on the next dispatch round and the next request. Audited in the tenant's log.",
    scope: "platform",
    params: idParams,
    body: updateTenantLimitsSchema,
    responses: { 200: { description: "The tenant after the change", schema: operatorTenantSchema } },
    errors: ["not_found", "validation_failed"],
  },
  operatorSuspendTenant: {
    method: "post",
    path: "/operator/tenants/{id}/suspend",
    summary: "Suspend a tenant (platform operators)",
    description:
      "Its API keys and members' sessions get 403 `tenant-suspended`; nothing of it is dispatched, its jobs wait " +
      "(attempts already running finish). Audited with the reason.",
    scope: "platform",
    params: idParams,
    body: suspendTenantSchema,
    responses: { 200: { description: "Suspended (or already)", schema: operatorTenantSchema } },
    errors: ["not_found", "validation_failed"],
  },
  operatorResumeTenant: {
    method: "post",
    path: "/operator/tenants/{id}/resume",
    summary: "Resume a suspended tenant (platform operators)",
    scope: "platform",
    params: idParams,
    responses: { 200: { description: "Resumed: its keys work and its due jobs dispatch again", schema: operatorTenantSchema } },
    errors: ["not_found"],
  },
  listAccountSessions: {
    method: "get",
    path: "/account/sessions",
    summary: "The signed-in person's active console sessions (account)",
    description: "Each sign-in that has not signed out, idled past TICK_SESSION_IDLE_TIMEOUT or reached TICK_SESSION_MAX_AGE; `current` marks the one asking.",
    scope: "account",
    responses: { 200: { description: "Active sessions, most recently seen first", schema: accountSessionListSchema } },
    errors: [],
  },
  revokeAccountSessions: {
    method: "post",
    path: "/account/sessions/revoke",
    summary: "Sign out everywhere: end every session of the signed-in person, this one included (account)",
    description: "Each ended session is refused (401) from its next request on, in every browser.",
    scope: "account",
    responses: { 200: { description: "Signed out everywhere", schema: endedSessionsSchema } },
    errors: [],
  },
  revokeAccountSession: {
    method: "post",
    path: "/account/sessions/{id}/revoke",
    summary: "End one of the signed-in person's sessions (account)",
    description: "Another person's session, or an unknown id, is 404. Ending one that already ended answers `ended: 0`.",
    scope: "account",
    params: idParams,
    responses: { 200: { description: "Ended (or had already ended)", schema: endedSessionsSchema } },
    errors: ["not_found"],
  },
  changePassword: {
    method: "post",
    path: "/account/password",
    summary: "Change the signed-in person's password (account)",
    description:
      "Needs the current password (a wrong one is 422 with an error at `currentPassword`). Every other session of the " +
      "person is signed out; this one stays.",
    scope: "account",
    body: changePasswordSchema,
    responses: { 200: { description: "Changed", schema: passwordChangedSchema } },
    errors: ["validation_failed", "conflict"],
  },
  operatorStatus: {
    method: "get",
    path: "/operator/status",
    summary: "The platform's status: shard map, schedulers and workers with their readiness, outbox lag, due index, open breakers (platform operators)",
    description:
      "Shards from shard_leases; schedulers and workers from their heartbeat rows, each with its own /readyz answer, fetched by " +
      "the console (1 s timeout) from the address the process registered; outbox lag as the scheduler's metric; open breakers " +
      "per dependency from Redis.",
    scope: "platform",
    responses: { 200: { description: "The status now", schema: platformStatusSchema } },
    errors: [],
  },
  listWebhookEndpoints: {
    method: "get",
    path: "/webhooks/endpoints",
    summary: "List webhook endpoints, with their last 24 hours of deliveries",
    scope: "webhooks:read",
    responses: { 200: { description: "The tenant's endpoints, oldest first", schema: webhookEndpointListSchema } },
    errors: [],
  },
  createWebhookEndpoint: {
    method: "post",
    path: "/webhooks/endpoints",
    summary: "Add a webhook endpoint",
    description:
      "Completion webhooks of the subscribed events go to it, signed with the tenant's signing secrets. The URL must " +
      "be http(s) and resolve to public addresses (checked now and again at every connection): 422 target_not_allowed.",
    scope: "webhooks:write",
    body: createWebhookEndpointSchema,
    responses: { 201: { description: "Created", schema: webhookEndpointSchema } },
    errors: ["validation_failed", "target_not_allowed"],
  },
  getWebhookEndpoint: {
    method: "get",
    path: "/webhooks/endpoints/{id}",
    summary: "Get a webhook endpoint",
    scope: "webhooks:read",
    params: idParams,
    responses: { 200: { description: "The endpoint", schema: webhookEndpointSchema } },
    errors: ["not_found"],
  },
  updateWebhookEndpoint: {
    method: "patch",
    path: "/webhooks/endpoints/{id}",
    summary: "Change a webhook endpoint: URL, events, description, enabled",
    scope: "webhooks:write",
    params: idParams,
    body: updateWebhookEndpointSchema,
    responses: { 200: { description: "The endpoint after the change", schema: webhookEndpointSchema } },
    errors: ["not_found", "validation_failed", "target_not_allowed"],
  },
  deleteWebhookEndpoint: {
    method: "delete",
    path: "/webhooks/endpoints/{id}",
    summary: "Delete a webhook endpoint (its delivery log stays)",
    scope: "webhooks:write",
    params: idParams,
    responses: { 200: { description: "Deleted: the endpoint as it was", schema: webhookEndpointSchema } },
    errors: ["not_found"],
  },
  testWebhookEndpoint: {
    method: "post",
    path: "/webhooks/endpoints/{id}/test",
    summary: "Send a test delivery (event webhook.test) to an endpoint",
    description: "Queued like any delivery (signed, retried, in the log); answers with the delivery to follow.",
    scope: "webhooks:write",
    params: idParams,
    responses: { 202: { description: "Queued", schema: webhookDeliverySchema } },
    errors: ["not_found"],
  },
  listWebhookDeliveries: {
    method: "get",
    path: "/webhooks/deliveries",
    summary: "The delivery log: per endpoint, per job, by status or event, newest first",
    scope: "webhooks:read",
    query: webhookDeliveryQuerySchema,
    responses: { 200: { description: "Deliveries; pass nextCursor back as cursor", schema: webhookDeliveryPageSchema } },
    errors: ["bad_request", "validation_failed"],
  },
  redeliverWebhooks: {
    method: "post",
    path: "/webhooks/deliveries/redeliver",
    summary: "Send failed deliveries again (up to 100)",
    description: "Each failed delivery is tried once more, now; one result per id. A pending or delivered one is left alone (not_failed).",
    scope: "webhooks:write",
    body: redeliverSchema,
    responses: { 200: { description: "One result per id, in order", schema: redeliverResultSchema } },
    errors: ["validation_failed"],
  },
  listApiKeys: {
    method: "get",
    path: "/keys",
    summary: "List API keys (never the secrets)",
    scope: "keys:read",
    responses: { 200: { description: "All keys of the tenant", schema: keyList } },
    errors: [],
  },
  createApiKey: {
    method: "post",
    path: "/keys",
    summary: "Create an API key",
    description: "The key is returned once. A key can only grant scopes it holds itself (admin holds all).",
    scope: "keys:write",
    body: createApiKeySchema,
    responses: { 201: { description: "Created", schema: createdApiKeySchema } },
    errors: ["bad_request", "validation_failed", "forbidden"],
  },
  revokeApiKey: {
    method: "post",
    path: "/keys/{id}/revoke",
    summary: "Revoke an API key (effective on the next request)",
    scope: "keys:write",
    params: idParams,
    responses: { 200: { description: "Revoked", schema: apiKeySchema } },
    errors: ["not_found", "validation_failed"],
  },
  listSchedules: {
    method: "get",
    path: "/schedules",
    summary: "List schedules",
    scope: "schedules:read",
    query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50), cursor: z.string().max(500).optional() }),
    responses: { 200: { description: "A page of schedules", schema: schedulePageSchema } },
    errors: ["validation_failed"],
  },
  createSchedule: {
    method: "post",
    path: "/schedules",
    summary: "Create a recurring schedule (cron in an IANA zone, with DST and misfire policies)",
    scope: "schedules:write",
    body: createScheduleSchema,
    responses: { 201: { description: "Created", schema: scheduleSchema } },
    errors: ["bad_request", "validation_failed", "target_not_allowed", "conflict"],
  },
  previewRule: {
    method: "post",
    path: "/schedules/preview",
    summary: "Preview the next fire times of an unsaved rule",
    scope: "schedules:read",
    body: previewRuleSchema,
    responses: { 200: { description: "Next occurrences", schema: previewSchema } },
    errors: ["bad_request", "validation_failed"],
  },
  getSchedule: {
    method: "get",
    path: "/schedules/{id}",
    summary: "Get a schedule",
    scope: "schedules:read",
    params: idParams,
    responses: { 200: { description: "The schedule", schema: scheduleSchema } },
    errors: ["not_found"],
  },
  updateSchedule: {
    method: "patch",
    path: "/schedules/{id}",
    summary: "Change a schedule's rule, policies or job",
    scope: "schedules:write",
    params: idParams,
    body: updateScheduleSchema,
    responses: { 200: { description: "Updated", schema: scheduleSchema } },
    errors: ["bad_request", "not_found", "validation_failed", "target_not_allowed"],
  },
  deleteSchedule: {
    method: "delete",
    path: "/schedules/{id}",
    summary: "Delete a schedule (jobs already created stay)",
    scope: "schedules:write",
    params: idParams,
    responses: { 200: { description: "Deleted", schema: scheduleSchema } },
    errors: ["not_found"],
  },
  pauseSchedule: {
    method: "post",
    path: "/schedules/{id}/pause",
    summary: "Pause a schedule (occurrences while paused are not run)",
    scope: "schedules:write",
    params: idParams,
    responses: { 200: { description: "Paused", schema: scheduleSchema } },
    errors: ["not_found"],
  },
  resumeSchedule: {
    method: "post",
    path: "/schedules/{id}/resume",
    summary: "Resume a schedule from now",
    scope: "schedules:write",
    params: idParams,
    responses: { 200: { description: "Resumed", schema: scheduleSchema } },
    errors: ["not_found"],
  },
  previewSchedule: {
    method: "get",
    path: "/schedules/{id}/preview",
    summary: "Preview a schedule's next fire times, with the DST policy's effect marked",
    scope: "schedules:read",
    params: idParams,
    query: previewQuerySchema,
    responses: { 200: { description: "Next occurrences", schema: previewSchema } },
    errors: ["not_found", "validation_failed"],
  },
  listDeadJobs: {
    method: "get",
    path: "/dlq",
    summary: "Dead jobs (the DLQ), newest first, with their last error and attempt history",
    scope: "dlq:read",
    query: dlqQuerySchema,
    responses: { 200: { description: "A page of dead jobs", schema: dlqPageSchema } },
    errors: ["validation_failed"],
  },
  createDlqReplay: {
    method: "post",
    path: "/dlq/replays",
    summary: "Replay dead jobs (or dry-run it): paced, highest priority first, pausing itself if they keep failing",
    description:
      "Takes the dead jobs matching `filter` and/or `jobIds` that no other replay holds, and releases them at `ratePerSecond` " +
      "(default 10/s), evenly spaced and highest priority first. Each released job keeps its ID and idempotency key and " +
      "gets `attempts` new attempts, each with a new attempt ID. When more than `failureThreshold` of the last " +
      "`failureWindow` replayed jobs fail again, the replay pauses itself and says why. With `dryRun: true` nothing " +
      "changes: the answer is the count and a sample (200). Every action is written to the audit log.",
    scope: "dlq:replay",
    body: createReplaySchema,
    responses: {
      200: { description: "Dry run: what would be replayed", schema: replayPreviewSchema },
      201: { description: "The replay, running", schema: replaySchema },
    },
    errors: ["bad_request", "validation_failed", "nothing_to_replay"],
  },
  listDlqReplays: {
    method: "get",
    path: "/dlq/replays",
    summary: "DLQ replays, newest first, with live progress",
    scope: "dlq:read",
    query: replayListQuerySchema,
    responses: { 200: { description: "A page of replays", schema: replayPageSchema } },
    errors: ["validation_failed"],
  },
  getDlqReplay: {
    method: "get",
    path: "/dlq/replays/{id}",
    summary: "A DLQ replay and its live progress (released, succeeded, failed, remaining)",
    scope: "dlq:read",
    params: idParams,
    responses: { 200: { description: "The replay", schema: replaySchema } },
    errors: ["not_found"],
  },
  pauseDlqReplay: {
    method: "post",
    path: "/dlq/replays/{id}/pause",
    summary: "Pause a running replay (jobs already released still run)",
    scope: "dlq:replay",
    params: idParams,
    responses: { 200: { description: "The replay after the change", schema: replaySchema } },
    errors: ["not_found", "conflict"],
  },
  resumeDlqReplay: {
    method: "post",
    path: "/dlq/replays/{id}/resume",
    summary: "Resume a paused or auto-paused replay (its failure rate is judged afresh)",
    scope: "dlq:replay",
    params: idParams,
    responses: { 200: { description: "The replay after the change", schema: replaySchema } },
    errors: ["not_found", "conflict"],
  },
  cancelDlqReplay: {
    method: "post",
    path: "/dlq/replays/{id}/cancel",
    summary: "Cancel a replay: jobs not yet released stay dead",
    scope: "dlq:replay",
    params: idParams,
    responses: { 200: { description: "The replay after the change", schema: replaySchema } },
    errors: ["not_found", "conflict"],
  },
  getStats: {
    method: "get",
    path: "/stats",
    summary: "Time series of the tenant's jobs, queues and dependencies over a window",
    description:
      "For the console's overview charts, and for scripts: jobs finished per bin by outcome with the scheduling lag's " +
      "p50 and p99, the DLQ size, each queue's backlog, in-flight count and oldest due age, and the failure rate of the " +
      "5 busiest dependencies. Read from per-minute rollups the scheduler writes as jobs finish (a job is counted about " +
      "5 to 10 seconds after it finished; queues are sampled once a minute), kept for the tenant's retention and at least " +
      "8 days. Every bin of the window is present: counts 0, percentiles and gauges null where there is nothing.",
    scope: "jobs:read",
    query: statsQuerySchema,
    responses: { 200: { description: "The window's bins", schema: statsSchema } },
    errors: ["validation_failed"],
  },
  getSettings: {
    method: "get",
    path: "/settings",
    summary: "The tenant's retention and export settings",
    scope: "admin",
    responses: { 200: { description: "The settings", schema: tenantSettingsSchema } },
    errors: [],
  },
  updateSettings: {
    method: "patch",
    path: "/settings",
    summary: "Change the tenant's retention and export settings",
    description: "retentionDays may not exceed the deployment's retentionMaxDays (422). The change is audited.",
    scope: "admin",
    body: updateTenantSettingsSchema,
    responses: { 200: { description: "The settings after the change", schema: tenantSettingsSchema } },
    errors: ["bad_request", "validation_failed", "unsupported_media_type"],
  },
  listAuditLog: {
    method: "get",
    path: "/audit",
    summary: "The tenant's audit log, newest first (who changed what, when)",
    scope: "audit:read",
    query: auditQuerySchema,
    responses: { 200: { description: "A page of audit entries", schema: auditPageSchema } },
    errors: ["validation_failed"],
  },
  listSigningSecrets: {
    method: "get",
    path: "/webhooks/secrets",
    summary: "Webhook signing secrets currently valid (newest first)",
    description: "Completion webhooks are signed with every secret listed here (Standard Webhooks). The first call creates the tenant's first secret.",
    scope: "webhooks:write",
    responses: { 200: { description: "Valid secrets", schema: signingSecretListSchema } },
    errors: [],
  },
  rotateSigningSecret: {
    method: "post",
    path: "/webhooks/secrets/rotate",
    summary: "Rotate the webhook signing secret",
    description: "Adds a new secret; the current ones keep signing for `overlapSeconds`, so receivers can switch without missing a webhook.",
    scope: "webhooks:write",
    body: rotateSecretSchema,
    responses: { 200: { description: "Valid secrets after the rotation", schema: signingSecretListSchema } },
    errors: ["bad_request", "validation_failed"],
  },
} as const satisfies Record<string, RouteDef>;

export type Routes = typeof routes;
export type RouteName = keyof Routes;
