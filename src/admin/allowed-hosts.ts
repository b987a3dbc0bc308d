// Which `Host` header values the admin port answers (docs/configuration.md#admin,
// `admin.allowedHosts`): loopback names, this pod's own host name and addresses, and the
// names the config lists. NOTE: a DNS rebinding page reaches the port under the
// attacker's own name, so its requests carry that name in `Host` and are refused here;
// the kubelet's probes and Prometheus send the pod's address, which is allowed. Pure but
// for ownHostNames, which reads this machine's names.
import { hostname, networkInterfaces } from 'node:os';
import { isLoopbackHost } from '../network/address-rule.js';

/** This machine's host name and the addresses of its interfaces, lower-cased. */
export function ownHostNames(): string[] {
  const names = [hostname()];
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) names.push(address.address.replace(/%.*$/, ''));
  }
  return names.map((name) => name.toLowerCase());
}

/** The name of a `Host` header without its port and IPv6 brackets, lower-cased; undefined when it has none. */
export function hostNameOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const text = header.trim().toLowerCase();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    return end > 1 ? text.slice(1, end) : undefined;
  }
  const colon = text.indexOf(':');
  const name = (colon === -1 ? text : text.slice(0, colon)).replace(/\.$/, '');
  return name === '' ? undefined : name;
}

/**
 * True when a request with this `Host` header may be answered: a loopback name or address,
 * one of `own` (ownHostNames), or one of `configured`. A request without `Host` (HTTP/1.0)
 * is answered: a browser always sends one.
 */
export function hostAllowed(header: string | undefined, own: ReadonlySet<string>, configured: readonly string[]): boolean {
  if (header === undefined) return true;
  const name = hostNameOf(header);
  if (name === undefined) return false;
  return isLoopbackHost(name) || own.has(name) || configured.some((allowed) => allowed.toLowerCase() === name);
}
