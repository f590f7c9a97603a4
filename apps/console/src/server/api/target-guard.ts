import { lookup } from "node:dns/promises";
import { AppError, checkTargetUrl, isAddressAllowed, type Cidr } from "@tick/core";

/**
 * SSRF protection at creation: a tenant's target or callback URL must be http(s) and resolve only to
 * public addresses (or to ranges the operator allowed). Every resolved address is checked, since a
 * name with one public and one private record could be steered to the private one. The worker checks
 * the address again when it connects (DNS can change in between).
 */
export async function assertTargetAllowed(url: string, field: string, allowed: readonly Cidr[]): Promise<void> {
  const refuse = (reason: string) =>
    new AppError("target_not_allowed", `${field}: ${reason}`, { extra: { errors: [{ path: field, message: reason }] } });
  const checked = checkTargetUrl(url);
  if (!checked.ok) throw refuse(checked.reason);
  let addresses: string[];
  if (checked.literalIp) {
    addresses = [checked.literalIp];
  } else {
    try {
      addresses = (await lookup(checked.host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw refuse(`host ${checked.host} does not resolve`);
    }
  }
  for (const address of addresses) {
    const verdict = isAddressAllowed(address, allowed);
    // "address 10.0.0.1 is in a blocked range (private)": said of the host itself when it is that address,
    // and of what the name resolved to otherwise ("localhost resolves to 127.0.0.1, which is in a blocked range ...").
    if (!verdict.ok) throw refuse(checked.literalIp ? verdict.reason : `${checked.host} resolves to ${verdict.reason.replace(/^address (\S+) is in/, "$1, which is in")}`);
  }
}
