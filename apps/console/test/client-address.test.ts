// Which address a request counts under for per-address limits (client-address.ts), without a server:
// the pure choice over X-Forwarded-For and the socket, and the recorder's header that carries the socket.
import { afterAll, describe, expect, it } from "vitest";
import { startSink } from "@tick/testing";
import {
  normalizeAddress,
  recordedSocketAddress,
  recordSocketAddresses,
  requestClientAddress,
  resolveClientAddress,
  SOCKET_ADDRESS_HEADER,
} from "../src/server/api/client-address";

describe("resolveClientAddress", () => {
  it.each([
    // [X-Forwarded-For, socket, trusted proxies, expected]
    [null, "203.0.113.9", 0, "203.0.113.9"],
    ["198.51.100.1", "203.0.113.9", 0, "203.0.113.9"], // no proxy trusted: the header is the client's own words
    ["198.51.100.1, 198.51.100.2", "10.0.0.5", 0, "10.0.0.5"],
    [null, null, 0, "unknown"],
    ["198.51.100.1", null, 0, "unknown"], // the socket unseen: never fall back to what the client wrote
    ["198.51.100.1", "10.0.0.5", 1, "198.51.100.1"], // the proxy at 10.0.0.5 appended the client
    ["6.6.6.6, 198.51.100.1", "10.0.0.5", 1, "198.51.100.1"], // 6.6.6.6 is the client's invention
    ["6.6.6.6, 198.51.100.1, 10.0.0.4", "10.0.0.5", 2, "198.51.100.1"], // CDN then load balancer
    ["6.6.6.6, 198.51.100.1, 10.0.0.4", "10.0.0.5", 1, "10.0.0.4"],
    [null, "203.0.113.9", 1, "203.0.113.9"], // no header: not through the proxy, the socket is the client
    ["198.51.100.1", "10.0.0.5", 3, "198.51.100.1"], // fewer hops than trusted: the leftmost
    ["6.6.6.6,, 198.51.100.1", "10.0.0.5", 2, "unknown"], // an empty entry is a hop too, not skipped into the client's part
    [" 198.51.100.1 ", "10.0.0.5", 1, "198.51.100.1"],
  ] as const)("XFF %j, socket %j, %i trusted → %j", (forwardedFor, socketAddress, trustedProxies, expected) => {
    expect(resolveClientAddress({ forwardedFor, socketAddress, trustedProxies })).toBe(expected);
  });
});

describe("normalizeAddress", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    [" 203.0.113.7 ", "203.0.113.7"],
    ["203.0.113.7:5123", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["::FFFF:203.0.113.7", "203.0.113.7"],
    ["2001:DB8::1", "2001:db8::1"],
    ["[2001:db8::1]:443", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["2001:db8::1", "2001:db8::1"], // not mistaken for address:port
  ])("%j → %j", (raw, expected) => {
    expect(normalizeAddress(raw)).toBe(expected);
  });
});

describe("the socket-address recorder", () => {
  // A real server in this process: the recorder subscribes to Node's request channel, as in the console.
  recordSocketAddresses();
  let seen: Headers | undefined;
  const listening = startSink({
    respond: (req) => {
      seen = new Headers(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      return undefined;
    },
  });
  afterAll(async () => (await listening).close());

  it("records the socket's address, replacing a client-sent copy of its header", async () => {
    const server = await listening;
    await fetch(server.url("/"), { headers: { [SOCKET_ADDRESS_HEADER]: "guess 198.51.100.1", "x-forwarded-for": "198.51.100.2" } });
    expect(recordedSocketAddress(seen!)).toBe("127.0.0.1");
    expect(seen!.get(SOCKET_ADDRESS_HEADER)).not.toContain("198.51.100.1");
    const request = new Request("http://console.test/", { headers: seen });
    expect(requestClientAddress(request, 0)).toBe("127.0.0.1");
    expect(requestClientAddress(request, 1)).toBe("198.51.100.2");
  });

  it("believes only a value carrying this process's secret: one that missed the recorder is unknown", () => {
    expect(recordedSocketAddress(new Headers({ [SOCKET_ADDRESS_HEADER]: "guess 198.51.100.1" }))).toBeNull();
    expect(recordedSocketAddress(new Headers({ [SOCKET_ADDRESS_HEADER]: "198.51.100.1" }))).toBeNull();
    expect(recordedSocketAddress(new Headers())).toBeNull();
    expect(requestClientAddress(new Request("http://console.test/", { headers: { [SOCKET_ADDRESS_HEADER]: "guess 198.51.100.1" } }), 0)).toBe("unknown");
  });
});
