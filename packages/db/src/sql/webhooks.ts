// Completion webhooks (SPEC §1): for every terminal outcome, a delivery per destination (the job's
// callback URL and each enabled endpoint subscribed to the event) and an outbox row, written by the
// statement that ends the job (finish.ts). Deliveries retry with backoff; the rows are the delivery log.
import type { Queryable } from "./types.js";

/** The event a completion webhook announces (not core's JobEvent, which names a state-machine transition). */
export type WebhookEventType = "job.succeeded" | "job.dead" | "job.expired" | "job.cancelled" | "job.rate_limited";

/** The completion webhook's event of each terminal job state (finish.ts refuses to load if one lacks an event). */
export const EVENT_FOR_STATUS: Readonly<Record<string, WebhookEventType | undefined>> = {
  succeeded: "job.succeeded",
  dead: "job.dead",
  expired: "job.expired",
  cancelled: "job.cancelled",
  rate_limited: "job.rate_limited",
};

export interface DeliveryToSend {
  id: string;
  tenant_id: string;
  job_id: string;
  event: string;
  url: string;
  payload: unknown;
  status: string;
  attempts: number;
  secrets: string[];
  /** The job's trace context, null for a test delivery or one created before traces: each try is a child span. */
  traceparent: string | null;
  tracestate: string | null;
}

/** A pending delivery with the tenant's unexpired signing secrets (null if already delivered or failed). */
export async function loadPendingDelivery(db: Queryable, deliveryId: string): Promise<DeliveryToSend | null> {
  const { rows } = await db.query<DeliveryToSend>(
    `SELECT d.id, d.tenant_id, d.job_id, d.event, d.url, d.payload, d.status, d.attempts, d.traceparent, d.tracestate,
            coalesce((SELECT array_agg(s.secret ORDER BY s.created_at DESC) FROM signing_secrets s
                       WHERE s.tenant_id = d.tenant_id AND (s.expires_at IS NULL OR s.expires_at > now())), '{}') AS secrets
       FROM webhook_deliveries d WHERE d.id = $1 AND d.status = 'pending'`,
    [deliveryId],
  );
  return rows[0] ?? null;
}

export async function insertSigningSecret(db: Queryable, tenantId: string, secret: string, expiresAt: Date | null = null): Promise<void> {
  await db.query(`INSERT INTO signing_secrets (id, tenant_id, secret, expires_at) VALUES (gen_random_uuid(), $1, $2, $3)`, [tenantId, secret, expiresAt]);
}

/**
 * Rotation: the new secret signs from now on; the current ones keep signing (and verifying at the
 * receiver) until `overlapMs` from now, then expire.
 */
// The expiry is truncated to the column's millisecond precision (rounding could put it just after now()), so
// a zero overlap has ended the old secrets even for a read later in the same transaction.
export async function rotateSigningSecret(db: Queryable, tenantId: string, secret: string, overlapMs: number): Promise<void> {
  await db.query(
    `WITH old AS (
       UPDATE signing_secrets SET expires_at = LEAST(coalesce(expires_at, 'infinity'), date_trunc('milliseconds', now()) + make_interval(secs => $3 / 1000.0))
        WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > now())
     )
     INSERT INTO signing_secrets (id, tenant_id, secret) VALUES (gen_random_uuid(), $1, $2)`,
    [tenantId, secret, overlapMs],
  );
}

/** Records one delivery try: delivered, retry later (with a new outbox row available then), or failed for good. */
export async function recordDeliveryTry(
  db: Queryable,
  deliveryId: string,
  result: { delivered: boolean; status: number | null; error: string | null; retryInMs: number | null; durationMs?: number | null },
): Promise<{ recorded: boolean; ageSeconds: number | null }> {
  const { rows } = await db.query<{ age_seconds: number }>(
    `WITH d AS (
       UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $2, last_error = left($3, 1000), last_duration_ms = $6,
              status = CASE WHEN $4 THEN 'delivered'::delivery_status WHEN $5::float8 IS NULL THEN 'failed'::delivery_status ELSE 'pending'::delivery_status END,
              delivered_at = CASE WHEN $4 THEN now() ELSE NULL END,
              next_attempt_at = CASE WHEN $5::float8 IS NULL THEN next_attempt_at ELSE now() + make_interval(secs => $5 / 1000.0) END
        WHERE id = $1 AND status = 'pending'
        RETURNING id, tenant_id, job_id, attempts, status, extract(epoch FROM now() - created_at)::float8 AS age_seconds
     ), retry AS (
       INSERT INTO outbox (kind, shard, tenant_id, job_id, payload, available_at)
       SELECT 'webhook', t.shard, d.tenant_id, d.job_id, jsonb_build_object('deliveryId', d.id, 'try', d.attempts + 1),
              now() + make_interval(secs => $5 / 1000.0)
         -- the tenant's shard (the job's, fixed at creation): the job may have moved to history by now
         FROM d JOIN tenants t ON t.id = d.tenant_id
        WHERE d.status = 'pending'
     )
     SELECT age_seconds FROM d`,
    [deliveryId, result.status, result.error, result.delivered, result.retryInMs, result.durationMs === undefined || result.durationMs === null ? null : Math.round(result.durationMs)],
  );
  // The delivery's age at this try (database clock): since the event (the job's outcome) was recorded.
  return { recorded: rows.length > 0, ageSeconds: rows[0]?.age_seconds ?? null };
}

export async function listSigningSecrets(db: Queryable, tenantId: string): Promise<{ secret: string; created_at: Date; expires_at: Date | null }[]> {
  const { rows } = await db.query<{ secret: string; created_at: Date; expires_at: Date | null }>(
    `SELECT secret, created_at, expires_at FROM signing_secrets
      WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC`,
    [tenantId],
  );
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The webhooks API: endpoints, the delivery log, test deliveries and redelivery.

export interface EndpointRow {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  delivered_24h: number;
  pending_24h: number;
  failed_24h: number;
}

// The last day's deliveries of each endpoint, by outcome, counted in one pass over them.
const ENDPOINTS_WITH_COUNTS = `SELECT e.id, e.url, e.description, e.events, e.enabled, e.created_at, e.updated_at,
       c.delivered_24h, c.pending_24h, c.failed_24h
  FROM webhook_endpoints e
  CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE d.status = 'delivered')::int AS delivered_24h,
           count(*) FILTER (WHERE d.status = 'pending')::int AS pending_24h,
           count(*) FILTER (WHERE d.status = 'failed')::int AS failed_24h
      FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.created_at > now() - interval '24 hours'
  ) c`;

export async function listEndpoints(db: Queryable, tenantId: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(`${ENDPOINTS_WITH_COUNTS} WHERE e.tenant_id = $1 ORDER BY e.created_at, e.id`, [tenantId]);
  return rows;
}

export async function findEndpoint(db: Queryable, tenantId: string, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(`${ENDPOINTS_WITH_COUNTS} WHERE e.tenant_id = $1 AND e.id = $2`, [tenantId, id]);
  return rows[0] ?? null;
}

export async function insertEndpoint(db: Queryable, tenantId: string, e: { url: string; events: string[]; description: string | null; enabled: boolean; secret: string }): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO webhook_endpoints (id, tenant_id, url, description, events, enabled, secret, updated_at)
     VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, now()) RETURNING id`,
    [tenantId, e.url, e.description, e.events, e.enabled, e.secret],
  );
  return rows[0]!.id;
}

/** Changes the given fields (undefined: unchanged); false when the endpoint is not this tenant's. */
export async function updateEndpoint(
  db: Queryable,
  tenantId: string,
  id: string,
  change: { url?: string; events?: string[]; description?: string | null; enabled?: boolean },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET
            url = coalesce($3, url), events = coalesce($4, events),
            description = CASE WHEN $5::boolean THEN $6 ELSE description END,
            enabled = coalesce($7, enabled), updated_at = now()
      WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, change.url ?? null, change.events ?? null, change.description !== undefined, change.description ?? null, change.enabled ?? null],
  );
  return rowCount === 1;
}

export async function deleteEndpoint(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
  return rowCount === 1;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string | null;
  job_id: string | null;
  event: string;
  url: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  next_attempt_at: Date;
  delivered_at: Date | null;
  created_at: Date;
}

const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.job_id, d.event, d.url, d.status, d.attempts, d.last_status, d.last_error, d.last_duration_ms,
       d.next_attempt_at, d.delivered_at, d.created_at`;

/** The delivery log, newest first, keyset-paginated on (created_at, id); filters by endpoint, job, status and event. */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  f: { endpointId?: string; jobId?: string; status?: string; event?: string; before?: { at: string; id: string }; limit: number },
): Promise<DeliveryRow[]> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
      WHERE d.tenant_id = $1 AND ($2::uuid IS NULL OR d.endpoint_id = $2) AND ($3::uuid IS NULL OR d.job_id = $3)
        AND ($4::delivery_status IS NULL OR d.status = $4) AND ($5::text IS NULL OR d.event = $5)
        AND ($6::timestamptz IS NULL OR (d.created_at, d.id) < ($6, $7::uuid))
      ORDER BY d.created_at DESC, d.id DESC LIMIT $8`,
    [tenantId, f.endpointId ?? null, f.jobId ?? null, f.status ?? null, f.event ?? null, f.before?.at ?? null, f.before?.id ?? null, f.limit],
  );
  return rows;
}

/** A test delivery (event webhook.test, no job) to one endpoint, with its outbox row: sent like any other. */
export async function insertTestDelivery(db: Queryable, tenantId: string, endpointId: string): Promise<DeliveryRow | null> {
  const { rows } = await db.query<DeliveryRow>(
    `WITH e AS (
       SELECT e.id, e.url, t.shard FROM webhook_endpoints e JOIN tenants t ON t.id = e.tenant_id WHERE e.tenant_id = $1 AND e.id = $2
     ), d AS (
       INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, job_id, event, url, payload)
       SELECT gen_random_uuid(), $1, e.id, NULL, 'webhook.test', e.url,
              jsonb_build_object('type', 'webhook.test',
                                 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                 'data', jsonb_build_object('endpointId', e.id, 'message', 'A test delivery from Tick: signed like every webhook.'))
         FROM e
       RETURNING *
     ), o AS (
       INSERT INTO outbox (kind, shard, tenant_id, job_id, payload)
       SELECT 'webhook', e.shard, $1, NULL, jsonb_build_object('deliveryId', d.id, 'try', 1) FROM d, e
     )
     SELECT ${DELIVERY_COLUMNS} FROM d`,
    [tenantId, endpointId],
  );
  return rows[0] ?? null;
}

/**
 * Failed deliveries back to pending, each with an outbox row for its next try (the try number goes on
 * from the last one, so the broker message is a new one): one more try, now. Returns the ids requeued.
 */
export async function requeueFailedDeliveries(db: Queryable, tenantId: string, ids: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH d AS (
       UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), delivered_at = NULL
        WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status = 'failed'
        RETURNING id, tenant_id, job_id, attempts
     ), o AS (
       INSERT INTO outbox (kind, shard, tenant_id, job_id, payload)
       SELECT 'webhook', t.shard, d.tenant_id, d.job_id, jsonb_build_object('deliveryId', d.id, 'try', d.attempts + 1)
         FROM d JOIN tenants t ON t.id = d.tenant_id
     )
     SELECT id FROM d`,
    [tenantId, ids],
  );
  return rows.map((r) => r.id);
}

/** Which of these ids are this tenant's deliveries. */
export async function existingDeliveries(db: Queryable, tenantId: string, ids: string[]): Promise<Set<string>> {
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM webhook_deliveries WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, [tenantId, ids]);
  return new Set(rows.map((r) => r.id));
}
