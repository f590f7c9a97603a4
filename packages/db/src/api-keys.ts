import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

const KEY_PATTERN = /^tk_([A-Za-z0-9]{12})_([A-Za-z0-9_-]{32,})$/;

function base62(bytes: Buffer): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return [...bytes].map((b) => alphabet[b % 62]).join("");
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * A new key: `tk_<12-char public prefix>_<secret>`. Only the prefix (for lookup) and the SHA-256 of
 * the whole key are stored; the key itself is shown once. SHA-256 is enough here because the secret
 * has 192 bits of entropy (a slow hash protects low-entropy passwords, which this is not).
 */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const prefix = base62(randomBytes(12));
  const key = `tk_${prefix}_${randomBytes(24).toString("base64url")}`;
  return { key, prefix: `tk_${prefix}`, hash: hashApiKey(key) };
}

/** Splits a presented key into its lookup prefix, or null when it cannot be one of ours. */
export function parseApiKey(key: string): { prefix: string } | null {
  const match = KEY_PATTERN.exec(key);
  return match ? { prefix: `tk_${match[1]}` } : null;
}

/** Constant-time comparison of a presented key against the stored hash. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const a = Buffer.from(hashApiKey(key), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A webhook signing secret in the Standard Webhooks format: "whsec_" + base64 of 24 random bytes. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}
