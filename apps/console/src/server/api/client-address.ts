import { randomBytes, timingSafeEqual } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { RequestHead } from "./request-head";

/**
 * The address a request's TCP connection came from, as the console's own socket saw it. Next gives route
 * handlers no socket, and its own `X-Forwarded-For` is no substitute: base-server.js only fills it in
 * from the socket when the client sent none (`req.headers['x-forwarded-for'] ??= socket.remoteAddress`),
 * so a client without a proxy in front chooses it. This header is set on every request before Next sees
 * it (recordSocketAddresses), replacing any copy the client sent.
 */
export const SOCKET_ADDRESS_HEADER = "x-tick-socket-address";

// The header carries a per-process secret before the address. Next's server listens before it runs the
// instrumentation hook that installs the recorder, and requests that arrive in between are queued and
// served later without passing through it: a client-sent copy of the header would survive on those.
// Only a value carrying this process's secret is believed. On globalThis because the instrumentation
// hook and the route handlers are separate bundles, each with its own copy of this module.
const SECRET = Symbol.for("tick.console.socketAddressSecret");
type SecretHolder = { [SECRET]?: string };

/**
 * Sets SOCKET_ADDRESS_HEADER on every request this process serves from now on, from the request's
 * socket (Node's `http.server.request.start` channel reports each request before Next's listener runs).
 * Called once at start-up by the console's node instrumentation; a second call does nothing.
 */
export function recordSocketAddresses(): void {
  const holder = globalThis as SecretHolder;
  if (holder[SECRET]) return;
  const secret = randomBytes(18).toString("base64url");
  holder[SECRET] = secret;
  subscribe("http.server.request.start", (message) => {
    const { request, socket } = message as { request: IncomingMessage; socket: Socket };
    // An assignment, so a copy the client sent (Node joins repeats into one value) is gone.
    request.headers[SOCKET_ADDRESS_HEADER] = `${secret} ${socket.remoteAddress ?? ""}`;
  });
}

/** The socket's address recorded for this request; null when the recorder did not see it (or a client forged it). */
export function recordedSocketAddress(headers: RequestHead["headers"]): string | null {
  const secret = (globalThis as SecretHolder)[SECRET];
  const value = headers.get(SOCKET_ADDRESS_HEADER);
  if (!secret || !value) return null;
  const space = value.indexOf(" ");
  if (space < 0) return null;
  const given = Buffer.from(value.slice(0, space));
  const expected = Buffer.from(secret);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return value.slice(space + 1) || null;
}

export interface ClientAddressInput {
  /** The request's X-Forwarded-For (every line of it, joined with commas as Node does), or null. */
  forwardedFor: string | null;
  /** The address of the connection the console accepted; null when unknown. */
  socketAddress: string | null;
  /** Proxy hops in front of the console that append to X-Forwarded-For (TICK_TRUSTED_PROXIES). */
  trustedProxies: number;
}

/**
 * Who is calling, for per-address limits. The hops are X-Forwarded-For's entries followed by the socket's
 * address (the nearest hop), and the answer is the one `trustedProxies` hops back from the socket: with 0
 * the socket's address and X-Forwarded-For is ignored (anyone can send it); with N, the Nth entry from the
 * right, the one the outermost trusted proxy appended. Entries left of it are the client's to choose and
 * are never read. With fewer hops than N the leftmost is taken (Express' `trust proxy` count does the
 * same): the request did not come through all N proxies, so the deployment's count is wrong.
 */
export function resolveClientAddress({ forwardedFor, socketAddress, trustedProxies }: ClientAddressInput): string {
  const socket = socketAddress ? normalizeAddress(socketAddress) : "";
  if (trustedProxies <= 0) return socket || "unknown";
  const forwarded = forwardedFor ? forwardedFor.split(",").map(normalizeAddress) : [];
  const hops = [...forwarded, socket];
  // Empty entries (",," or a missing socket address) still count as hops: skipping them would shift
  // the choice one entry left, into the part the client wrote.
  const chosen = hops[Math.max(0, hops.length - 1 - trustedProxies)];
  return chosen || "unknown";
}

/**
 * One spelling per address, so the same client counts once: trimmed, lower-case, without a port
 * (`203.0.113.7:5123`, `[2001:db8::1]:443`, as some proxies write them) and IPv4-mapped IPv6
 * (`::ffff:203.0.113.7`, how a dual-stack socket reports an IPv4 peer) as plain IPv4.
 */
export function normalizeAddress(raw: string): string {
  let address = raw.trim().toLowerCase();
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(address);
  if (bracketed) address = bracketed[1]!;
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(address)) address = address.slice(0, address.lastIndexOf(":"));
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(address);
  return mapped ? mapped[1]! : address;
}

/** The client address of a route handler's request (see resolveClientAddress). */
export function requestClientAddress(request: RequestHead, trustedProxies: number): string {
  return resolveClientAddress({
    forwardedFor: request.headers.get("x-forwarded-for"),
    socketAddress: recordedSocketAddress(request.headers),
    trustedProxies,
  });
}
