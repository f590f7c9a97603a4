// The console's response headers fixed at build time, shared by its next.config.ts (every response Next
// sends) and the API's direct path (apps/console/src/server/direct-api.ts), so both send the same. A
// subpath of its own (@tick/contract/response-headers): next.config.ts loads it without the schemas.

/**
 * Headers of every response, pages and API alike, fixed at build time (no per-request work on the API's
 * hot path). Pages get their Content-Security-Policy, with a per-request nonce, from the console's src/proxy.ts.
 */
export const EVERY_RESPONSE = [
  // Browsers take each response's Content-Type as given (no sniffing JSON or text into HTML or script).
  { key: "X-Content-Type-Options", value: "nosniff" },
  // Other origins learn the console's origin from a link, never a path (job, key or invitation IDs).
  { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
  // No framing (clickjacking), for browsers without CSP frame-ancestors.
  { key: "X-Frame-Options", value: "DENY" },
];

/**
 * The API answers JSON (and NDJSON, and next-auth's redirects): nothing in it may load or run anything,
 * or be framed. An /api address without a route falls back to the console's 404 page, shown unstyled.
 */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/**
 * next-auth's own pages (/api/auth/signout, /api/auth/error) are plain HTML with an inline <style> and
 * a form posting back to /api/auth: no script.
 */
export const AUTH_PAGES_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Sent on every response of a console served over https (proxy.ts on pages, next.config.ts behind a TLS proxy). */
export const STRICT_TRANSPORT_SECURITY = "max-age=31536000; includeSubDomains";

