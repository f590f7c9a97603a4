import ipaddr from "ipaddr.js";

/**
 * SSRF rules for job targets (webhook URLs): which addresses a worker may connect to. Pure: the caller
 * resolves DNS and checks every resolved address, so this module never does I/O or reads env.
 * All parsing and range membership comes from ipaddr.js; nothing here does CIDR arithmetic.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** One entry of an operator's allow list, e.g. "127.0.0.0/8". */
export interface Cidr {
  /** Normalised text, e.g. "127.0.0.0/8", "::1/128", "10.1.2.3/32"; used in messages. */
  readonly text: string;
  readonly address: Address;
  readonly prefixLength: number;
}

export interface AddressClassification {
  blocked: boolean;
  /** ipaddr.js's range name: "unicast", "private", "loopback", "linkLocal", "reserved", ... */
  range: string;
}

export type AddressCheck = { ok: true } | { ok: false; reason: string };

export type TargetUrlCheck =
  | { ok: true; url: URL; host: string; literalIp: string | null }
  | { ok: false; reason: string };

// ipaddr.js names everything that is in none of its special ranges "unicast", for IPv4 and IPv6 alike
// (there is no "global unicast"). Every other name (private, loopback, linkLocal, reserved, as112, amt,
// rfc6052 NAT64, 6to4, teredo, ...) is refused; an operator who needs one lists it in the allow list.
const ROUTABLE_RANGES: ReadonlySet<string> = new Set(["unicast"]);

// The deprecated IPv4-compatible block ::/96. ipaddr.js parses the text "::10.0.0.1" as the mapped
// address ::ffff:10.0.0.1 but calls the same address written "::a00:1" (the form WHATWG URL and
// getaddrinfo produce) plain "unicast"; judging it by its embedded IPv4 address keeps both spellings
// consistent and fails closed.
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");

const ALLOWED_PROTOCOLS: ReadonlySet<string> = new Set(["http:", "https:"]);

/**
 * Parses a comma-separated list like "127.0.0.0/8, ::1/128, 10.1.2.3" (a bare address is a /32 or /128).
 * Empty entries are ignored, so "" is the empty list. IPv4 must be four-part decimal: in operator
 * config, "10.1/8" or "0x7f.1" is far more likely a typo than a deliberate shorthand.
 * Throws an Error quoting the bad entry.
 */
export function parseCidrList(text: string): Cidr[] {
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map(parseCidrEntry);
}

function parseCidrEntry(entry: string): Cidr {
  let address: Address;
  let prefixLength: number;
  if (ipaddr.IPv4.isValidCIDRFourPartDecimal(entry) || ipaddr.IPv6.isValidCIDR(entry)) {
    [address, prefixLength] = ipaddr.parseCIDR(entry);
  } else if (ipaddr.IPv4.isValidFourPartDecimal(entry) || ipaddr.IPv6.isValid(entry)) {
    address = ipaddr.parse(entry);
    prefixLength = address.kind() === "ipv4" ? 32 : 128;
  } else {
    throw new Error(
      `Invalid CIDR ${JSON.stringify(entry)}: expected an IPv4 or IPv6 address with an optional /prefix ` +
        `(e.g. "127.0.0.0/8", "::1/128", "10.1.2.3")`,
    );
  }
  // Addresses are checked after unmapping ::ffff:a.b.c.d, so an IPv4-mapped entry is stored as IPv4
  // too (::ffff:10.0.0.0/104 is 10.0.0.0/8); otherwise it could never match.
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() && prefixLength >= 96) {
    address = address.toIPv4Address();
    prefixLength -= 96;
  }
  return { text: `${address.toString()}/${prefixLength}`, address, prefixLength };
}

/**
 * Parses an address and reduces the IPv6 forms that carry an IPv4 address (mapped ::ffff:a.b.c.d,
 * compatible ::a.b.c.d) to that IPv4 address. Non-decimal IPv4 ("2130706433", "0x7f.1") is accepted on
 * purpose: getaddrinfo/inet_aton read those as 127.0.0.1, so the check must read them the same way.
 */
function parseAddress(ip: string): Address {
  if (!ipaddr.isValid(ip)) throw new Error(`Invalid IP address ${JSON.stringify(ip)}`);
  const address = ipaddr.process(ip);
  if (address.kind() === "ipv6" && address.range() === "unicast" && address.match(IPV4_COMPATIBLE)) {
    return ipaddr.fromByteArray(address.toByteArray().slice(12));
  }
  return address;
}

/** Says whether an address is globally routable; everything else is blocked. Throws on a non-address. */
export function classifyAddress(ip: string): AddressClassification {
  const range = parseAddress(ip).range();
  return { blocked: !ROUTABLE_RANGES.has(range), range };
}

/**
 * Allowed if the address is globally routable or inside one of `allowed` (the operator's explicit
 * exceptions, e.g. 127.0.0.0/8 for the local demo). Something that is not an address is refused.
 */
export function isAddressAllowed(ip: string, allowed: readonly Cidr[]): AddressCheck {
  let address: Address;
  try {
    address = parseAddress(ip);
  } catch {
    return { ok: false, reason: `${JSON.stringify(ip)} is not an IP address` };
  }
  const range = address.range();
  if (ROUTABLE_RANGES.has(range)) return { ok: true };
  // match() throws across address families, hence the kind check.
  if (allowed.some((cidr) => cidr.address.kind() === address.kind() && address.match(cidr.address, cidr.prefixLength))) {
    return { ok: true };
  }
  const shown = address.toString() === ip ? ip : `${ip} (${address.toString()})`;
  return { ok: false, reason: `address ${shown} is in a blocked range (${range})` };
}

/**
 * Syntactic checks on a target URL before any DNS: http(s) only, no credentials, a host. `host` is the
 * hostname without IPv6 brackets; `literalIp` is set when the host is an IP literal. WHATWG URL has
 * already normalised IPv4 spellings ("http://2130706433/" has host "127.0.0.1"), so ipaddr.js only has
 * to recognise the canonical forms.
 */
export function checkTargetUrl(url: string): TargetUrlCheck {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: `${JSON.stringify(url)} is not a valid URL` };
  }
  if (!ALLOWED_PROTOCOLS.has(parsed.protocol)) {
    return { ok: false, reason: `protocol ${parsed.protocol} is not allowed (only http: and https:)` };
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return { ok: false, reason: "URL must not contain a username or password" };
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "") return { ok: false, reason: "URL has no host" };
  return { ok: true, url: parsed, host, literalIp: ipaddr.isValid(host) ? host : null };
}
