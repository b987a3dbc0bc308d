// `delivery.blockPrivateNetworks` (docs/webhooks.md#delivery-and-retries): for operators who let their own customers
// supply webhook URLs, so that nobody can point Switchyard at the cluster's internal
// services or the cloud's metadata endpoint. The address is checked where the socket
// connects, after DNS (http-sender.ts): a name that resolves to a public address when
// the config is checked and to 10.0.0.5 when the request goes out (DNS rebinding) is
// still refused, because the address checked is the one connected to.
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { LookupFunction } from 'node:net';

/** The `code` of a BlockedAddressError; classify.ts turns it into the `blocked` outcome. */
export const BLOCKED_ADDRESS_CODE = 'SWITCHYARD_BLOCKED_ADDRESS';

/** The kinds of address refused, each with its ranges, checked in this order. */
const BLOCKED_RANGES: readonly { kind: string; ranges: readonly (readonly [string, number])[] }[] = [
  // First, so that it is named for what it is rather than as one more link-local address.
  { kind: 'cloud metadata', ranges: [['169.254.169.254', 32]] },
  { kind: 'loopback', ranges: [['127.0.0.0', 8], ['::1', 128]] },
  { kind: 'private', ranges: [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]] },
  { kind: 'link-local', ranges: [['169.254.0.0', 16], ['fe80::', 10]] },
  { kind: 'unique-local', ranges: [['fc00::', 7]] },
  // 0.0.0.0 and :: reach the machine itself on Linux.
  { kind: 'unspecified', ranges: [['0.0.0.0', 8], ['::', 128]] },
  // ::a.b.c.d, deprecated: refused rather than worked out which IPv4 address it stands for.
  { kind: 'IPv4-compatible', ranges: [['::', 96]] },
];

/** The kind in a sentence: "a loopback address". */
const ARTICLE: Readonly<Record<string, string>> = { 'cloud metadata': 'the', unspecified: 'an', 'IPv4-compatible': 'an' };

// NOTE: node's BlockList also matches the IPv4-mapped IPv6 form (::ffff:127.0.0.1,
// ::ffff:7f00:1) of an IPv4 range, which is how a dual-stack socket may see an address.
const BLOCK_LISTS = BLOCKED_RANGES.map(({ kind, ranges }) => {
  const list = new BlockList();
  for (const [network, prefix] of ranges) list.addSubnet(network, prefix, isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return { kind, list };
});

/**
 * Why `address` (an IP address) is refused: "loopback", "private", "link-local",
 * "unique-local", "cloud metadata", ...; undefined when it is allowed (or not an IP
 * address at all: names are checked once resolved).
 */
export function blockedAddressKind(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return undefined;
  const type = family === 6 ? 'ipv6' : 'ipv4';
  return BLOCK_LISTS.find(({ list }) => list.check(bare, type))?.kind;
}

/** A connection refused by the guard: no request was sent. Permanent for the URL. */
export class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS_CODE;
  readonly retriable = false;

  constructor(
    readonly host: string,
    readonly address: string,
    readonly kind: string,
  ) {
    const what = host === address ? address : `${host} resolves to ${address}`;
    super(`not sent: ${what}, ${addressKindText(kind)}; delivery.blockPrivateNetworks refuses it`);
    this.name = 'BlockedAddressError';
  }
}

/** A kind in a sentence: "a loopback address", "the cloud metadata address". */
export function addressKindText(kind: string): string {
  return `${ARTICLE[kind] ?? 'a'} ${kind} address`;
}

/** The error for a host that is itself a refused IP address, else undefined. */
export function refuseLiteralAddress(host: string): BlockedAddressError | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const kind = blockedAddressKind(bare);
  return kind === undefined ? undefined : new BlockedAddressError(bare, bare, kind);
}

type ResolveAll = (hostname: string, options: LookupOptions & { all: true }, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * A `lookup` for net.connect / tls.connect that fails with BlockedAddressError when
 * any address the name resolves to is refused. NOTE: any, not all: the socket may try
 * each of them (happy eyeballs), so one refused address refuses the name.
 */
export function guardedLookup(resolve: ResolveAll = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, '', undefined);
        return;
      }
      for (const { address } of addresses) {
        const kind = blockedAddressKind(address);
        if (kind !== undefined) {
          callback(new BlockedAddressError(hostname, address, kind), '', undefined);
          return;
        }
      }
      if (options.all === true) {
        callback(null, addresses);
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' }), '', undefined);
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}

/** Host names that are loopback by definition (RFC 6761), for check-config's warning. */
export function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}
