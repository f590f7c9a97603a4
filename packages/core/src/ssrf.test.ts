import { describe, it, expect } from "vitest";
import { checkTargetUrl, classifyAddress, isAddressAllowed, parseCidrList } from "./ssrf.js";

describe("parseCidrList", () => {
  it("parses addresses and ranges of both families, a bare address being a /32 or /128", () => {
    expect(parseCidrList("127.0.0.0/8, ::1/128, 10.1.2.3").map((c) => c.text)).toEqual([
      "127.0.0.0/8",
      "::1/128",
      "10.1.2.3/32",
    ]);
    expect(parseCidrList("fd00::/8,::1").map((c) => c.text)).toEqual(["fd00::/8", "::1/128"]);
  });

  it.each(["", " ", " , ,"])("reads %j as the empty list", (text) => {
    expect(parseCidrList(text)).toEqual([]);
  });

  it("stores an IPv4-mapped range as IPv4 so it can match unmapped addresses", () => {
    expect(parseCidrList("::ffff:10.0.0.0/104").map((c) => c.text)).toEqual(["10.0.0.0/8"]);
  });

  it.each(["10.0.0.0/33", "10.0.0.300", "localhost", "10.1/8", "0x7f.1", "2130706433", "::1/129", "10.0.0.0/8/8", "10.0.0.0/"])(
    "rejects %j with a message naming the entry",
    (entry) => {
      expect(() => parseCidrList(`127.0.0.0/8, ${entry}`)).toThrow(`Invalid CIDR ${JSON.stringify(entry)}`);
    },
  );
});

describe("classifyAddress", () => {
  it.each([
    // loopback
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    // RFC 1918
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    // link-local, including the cloud metadata address
    ["169.254.169.254", "linkLocal"],
    ["169.254.0.1", "linkLocal"],
    ["fe80::1", "linkLocal"],
    ["fe80::1%eth0", "linkLocal"],
    // unique-local fc00::/7
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    // carrier-grade NAT
    ["100.64.0.1", "carrierGradeNat"],
    ["100.127.255.255", "carrierGradeNat"],
    // unspecified, broadcast, multicast
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["255.255.255.255", "broadcast"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    // ipaddr.js files IPv4 benchmarking (198.18/15), documentation and 240/4 all under "reserved"
    ["198.18.0.1", "reserved"],
    ["198.19.255.255", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.51.100.1", "reserved"],
    ["203.0.113.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["240.0.0.1", "reserved"],
    ["2001:db8::1", "reserved"],
    ["2001:2::1", "benchmarking"],
    // IPv6 forms that embed or translate to IPv4, refused whatever they carry
    ["64:ff9b::808:808", "rfc6052"],
    ["2002:a00:1::", "6to4"],
    ["2001::1", "teredo"],
    ["fec0::1", "deprecatedSiteLocal"],
    // IPv4-mapped IPv6 is judged by its IPv4 address
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:a00:1", "private"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:169.254.169.254", "linkLocal"],
    // deprecated IPv4-compatible ::a.b.c.d, in either spelling
    ["::10.0.0.1", "private"],
    ["::a00:1", "private"],
    ["::7f00:1", "loopback"],
    // non-decimal IPv4, as inet_aton would read it
    ["2130706433", "loopback"],
    ["0x7f.1", "loopback"],
  ])("blocks %s (%s)", (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ blocked: true, range });
  });

  it.each([
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "198.20.0.1",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:93.184.216.34",
  ])("allows the public address %s as unicast", (ip) => {
    expect(classifyAddress(ip)).toEqual({ blocked: false, range: "unicast" });
  });

  it.each(["", "example.com", "10.0.0.256", "::g", "[::1]"])("throws on the non-address %j", (ip) => {
    expect(() => classifyAddress(ip)).toThrow(`Invalid IP address ${JSON.stringify(ip)}`);
  });
});

describe("isAddressAllowed", () => {
  const demo = parseCidrList("127.0.0.0/8");

  it.each([
    ["127.0.0.1", demo],
    ["127.1.2.3", demo],
    ["::ffff:127.0.0.1", demo],
    ["93.184.216.34", demo],
    ["2606:4700::1111", []],
    ["::1", parseCidrList("::1")],
    ["10.1.2.3", parseCidrList("10.1.2.3")],
    ["fd00::5", parseCidrList("fd00::/8")],
  ] as const)("allows %s", (ip, allowed) => {
    expect(isAddressAllowed(ip, allowed)).toEqual({ ok: true });
  });

  it.each([
    ["10.0.0.1", demo, "address 10.0.0.1 is in a blocked range (private)"],
    ["10.0.0.5", [], "address 10.0.0.5 is in a blocked range (private)"],
    ["169.254.169.254", demo, "address 169.254.169.254 is in a blocked range (linkLocal)"],
    // the IPv4 list does not open the IPv6 loopback
    ["::1", demo, "address ::1 is in a blocked range (loopback)"],
    ["127.0.0.1", [], "address 127.0.0.1 is in a blocked range (loopback)"],
    ["10.1.2.4", parseCidrList("10.1.2.3"), "address 10.1.2.4 is in a blocked range (private)"],
    ["::ffff:10.0.0.1", demo, "address ::ffff:10.0.0.1 (10.0.0.1) is in a blocked range (private)"],
    ["fc00::1", parseCidrList("fd00::/8"), "address fc00::1 is in a blocked range (uniqueLocal)"],
    ["not-an-ip", demo, '"not-an-ip" is not an IP address'],
  ] as const)("refuses %s", (ip, allowed, reason) => {
    expect(isAddressAllowed(ip, allowed)).toEqual({ ok: false, reason });
  });
});

describe("checkTargetUrl", () => {
  it.each([
    ["https://example.com/hook", "example.com", null],
    ["HTTPS://Example.COM:8443/a?b=c", "example.com", null],
    ["http://93.184.216.34/x", "93.184.216.34", "93.184.216.34"],
    // WHATWG URL normalises these IPv4 spellings before ipaddr.js sees them
    ["http://2130706433/", "127.0.0.1", "127.0.0.1"],
    ["http://0x7f.1/", "127.0.0.1", "127.0.0.1"],
    ["http://017700000001/", "127.0.0.1", "127.0.0.1"],
    ["http://127.0.0.1./", "127.0.0.1", "127.0.0.1"],
    ["http://[::1]:8080/x", "::1", "::1"],
    ["http://[::ffff:10.0.0.1]/", "::ffff:a00:1", "::ffff:a00:1"],
    ["http://127.0.0.1.nip.io/", "127.0.0.1.nip.io", null],
  ])("accepts %s with host %s and literal IP %s", (input, host, literalIp) => {
    const result = checkTargetUrl(input);
    expect(result.ok && { host: result.host, literalIp: result.literalIp, href: result.url.href }).toEqual({
      host,
      literalIp,
      href: new URL(input).href,
    });
  });

  it("keeps the port on the parsed URL", () => {
    const result = checkTargetUrl("http://[::1]:8080/x");
    expect(result.ok && result.url.port).toBe("8080");
  });

  it.each([
    ["ftp://example.com/file", "protocol ftp: is not allowed (only http: and https:)"],
    ["file:///etc/passwd", "protocol file: is not allowed (only http: and https:)"],
    ["gopher://127.0.0.1:6379/_INFO", "protocol gopher: is not allowed (only http: and https:)"],
    ["javascript:alert(1)", "protocol javascript: is not allowed (only http: and https:)"],
    ["http://user:pass@example.com/", "URL must not contain a username or password"],
    ["http://user@example.com/", "URL must not contain a username or password"],
    ["https://:secret@example.com/", "URL must not contain a username or password"],
    ["not a url", '"not a url" is not a valid URL'],
    ["http://", '"http://" is not a valid URL'],
    ["/relative/path", '"/relative/path" is not a valid URL'],
  ])("refuses %s", (input, reason) => {
    expect(checkTargetUrl(input)).toEqual({ ok: false, reason });
  });

  it("feeds a literal IP to the address check, so a decimal loopback is still refused", () => {
    const result = checkTargetUrl("http://2130706433/");
    expect(result.ok && isAddressAllowed(result.literalIp ?? "", [])).toEqual({
      ok: false,
      reason: "address 127.0.0.1 is in a blocked range (loopback)",
    });
  });
});
