import { z } from "zod";

/**
 * Idempotency keys, in one place: the key's shape, the canonical form of the request a key is bound to, and
 * what a create does when it meets a stored key. Pure (this module also loads in the browser bundle that
 * imports the contract); the fingerprint itself, a hash, is server-only: requestHash in `@tick/core/node`.
 */

export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** An Idempotency-Key header value or a batch item's idempotencyKey: 1 to 255 characters. */
export const idempotencyKeySchema = z
  .string({ error: `must be a string of 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters` })
  .min(1, { error: `must be a string of 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters` })
  .max(IDEMPOTENCY_KEY_MAX_LENGTH, { error: `must be a string of 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters` });

/**
 * Canonical JSON: object keys sorted, `undefined` members dropped, no whitespace. Two requests that differ
 * only in key order or formatting have the same canonical form; any changed value changes it.
 */
export function canonicalJson(value: unknown): string {
  // Built by appending (no per-level arrays to map, filter and join): a batch of 1,000 creates hashes 1,000 of these.
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out += (i > 0 ? "," : "") + (v === undefined ? "null" : canonicalJson(v));
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  let out = "{";
  for (const k of Object.keys(record).sort()) {
    const v = record[k];
    if (v === undefined) continue;
    out += `${out.length > 1 ? "," : ""}${JSON.stringify(k)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** A key as stored: the fingerprint of the request that took it, and whether its window has ended. */
export interface StoredIdempotencyKey {
  requestHash: string | null;
  /** Past its expiry (judged by the database clock): the key may be released and taken again. */
  expired: boolean;
}

/**
 * - fresh: no stored key; create, taking the key.
 * - replay: the same request again; answer with what the first one created, create nothing.
 * - conflict: the key is bound to a different request; refuse (422 idempotency_key_reused).
 * - expired: the stored key's window ended; release it, then create as if fresh.
 */
export type IdempotencyDecision = "fresh" | "replay" | "conflict" | "expired";

export function decideIdempotency(stored: StoredIdempotencyKey | null | undefined, hash: string): IdempotencyDecision {
  if (!stored) return "fresh";
  if (stored.expired) return "expired";
  return stored.requestHash === hash ? "replay" : "conflict";
}
