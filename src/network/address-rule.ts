// The address rule of `delivery.blockPrivateNetworks` (docs/webhooks.md#the-address-guard):
// an allow list. Only global unicast addresses pass; every block of the IANA IPv4 and
// IPv6 special-purpose address registries is refused, and so are multicast, the reserved
// ranges and, for IPv6, everything outside 2000::/3 (the only block allocated for global
// unicast). IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64,
// 6to4, Teredo) are judged by that IPv4 address, as that is where the packets go.
//
// Pure: no socket, no DNS. The deliverer applies it to the address a socket connects to
// (src/delivery/private-network.ts), check-config to URLs whose host is an address.
//
// NOTE: the globally reachable entries inside the IETF protocol assignment blocks
// (192.0.0.0/24, 2001::/23: PCP, TURN and DNS-SD anycast, AMT, AS112, ORCHIDv2, DRIP)
// are refused too. Their anycast services answer from the nearest server, which may be
// one inside the operator's own network, and no webhook receiver lives there.

/** Why an address is refused; the words of the error ("a private address"). */
export type AddressKind =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'carrier-grade NAT'
  | 'link-local'
  | 'cloud metadata'
  | 'IETF protocol assignment'
  | 'documentation'
  | 'benchmarking'
  | 'AS112 DNS'
  | 'AMT relay'
  | '6to4 relay anycast'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'unique-local'
  | 'site-local'
  | 'discard-only'
  | 'local-use translation'
  | 'SRv6 SID';

/** The IPv6 forms whose IPv4 address decides. */
export type EmbeddingForm = 'IPv4-mapped' | 'IPv4-compatible' | 'NAT64' | '6to4' | 'Teredo';

export type AddressVerdict =
  | { allowed: true }
  | {
      allowed: false;
      kind: AddressKind;
      /** Set when an IPv6 address was refused for the IPv4 address it carries. */
      embedded?: { form: EmbeddingForm; ipv4: string };
    };

// Parsing (below) is strict: what a resolver and the WHATWG URL parser print (dotted
// quads without leading zeros; IPv6 with one "::" at most, an optional trailing dotted
// quad, an optional zone id and brackets).
const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_PATTERN = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

interface Block {
  bytes: Uint8Array;
  prefix: number;
  kind: AddressKind;
}

/**
 * Most specific first: the first block that contains an address names its kind.
 * Every row is an entry of the IANA registry (iana.org/assignments/iana-ipv4-special-registry)
 * or one of the named extras (multicast, cloud metadata).
 */
const IPV4_BLOCKS: readonly Block[] = blocks([
  // Cloud metadata services: named for what they are (the first two sit in ranges refused
  // anyway; Azure's WireServer is a public address reachable only from inside Azure).
  ['169.254.169.254/32', 'cloud metadata'],
  ['100.100.100.200/32', 'cloud metadata'],
  ['168.63.129.16/32', 'cloud metadata'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignment'],
  ['192.0.2.0/24', 'documentation'],
  ['192.31.196.0/24', 'AS112 DNS'],
  ['192.52.193.0/24', 'AMT relay'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['192.175.48.0/24', 'AS112 DNS'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

/**
 * IPv6 blocks (iana.org/assignments/iana-ipv6-special-registry and the address
 * architecture), most specific first. The forms that carry an IPv4 address are decoded
 * before this list is read (see judgeIpv6).
 */
const IPV6_BLOCKS: readonly Block[] = blocks([
  ['fd00:ec2::254/128', 'cloud metadata'],
  ['::1/128', 'loopback'],
  ['::/128', 'unspecified'],
  ['64:ff9b:1::/48', 'local-use translation'],
  ['100::/64', 'discard-only'],
  ['2001:2::/48', 'benchmarking'],
  ['2001::/23', 'IETF protocol assignment'],
  ['2001:db8::/32', 'documentation'],
  ['2620:4f:8000::/48', 'AS112 DNS'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'SRv6 SID'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast'],
]);

/** 2000::/3: the global unicast space; any other IPv6 address is reserved. */
const GLOBAL_UNICAST_V6 = blocks([['2000::/3', 'reserved']])[0]!;

/**
 * The verdict on an IP address (IPv4 dotted quad, or IPv6 with or without brackets and
 * zone id), or undefined when `text` is not an IP address (a name: it is judged once
 * resolved).
 */
export function judgeAddress(text: string): AddressVerdict | undefined {
  const bytes = parseIpAddress(text);
  if (bytes === undefined) return undefined;
  return bytes.length === 4 ? judgeIpv4(bytes) : judgeIpv6(bytes);
}

function judgeIpv4(bytes: Uint8Array): AddressVerdict {
  const block = IPV4_BLOCKS.find((b) => contains(b, bytes));
  return block === undefined ? { allowed: true } : { allowed: false, kind: block.kind };
}

function judgeIpv6(bytes: Uint8Array): AddressVerdict {
  const embedded = embeddedIpv4(bytes);
  if (embedded !== undefined) {
    for (const ipv4 of embedded.addresses) {
      const verdict = judgeIpv4(ipv4);
      if (!verdict.allowed) return { allowed: false, kind: verdict.kind, embedded: { form: embedded.form, ipv4: formatIpv4(ipv4) } };
    }
    return { allowed: true };
  }
  const block = IPV6_BLOCKS.find((b) => contains(b, bytes));
  if (block !== undefined) return { allowed: false, kind: block.kind };
  return contains(GLOBAL_UNICAST_V6, bytes) ? { allowed: true } : { allowed: false, kind: 'reserved' };
}

/**
 * The IPv4 addresses an IPv6 address stands for, by its form; undefined for any other
 * IPv6 address. Teredo carries two (the client, obfuscated, and its server): both must pass.
 */
function embeddedIpv4(bytes: Uint8Array): { form: EmbeddingForm; addresses: Uint8Array[] } | undefined {
  const zeros = (from: number, to: number) => bytes.subarray(from, to).every((b) => b === 0);
  // ::ffff:a.b.c.d (RFC 4291 §2.5.5.2): how a dual-stack socket shows an IPv4 peer.
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return { form: 'IPv4-mapped', addresses: [bytes.slice(12)] };
  // ::a.b.c.d (deprecated); :: and ::1 are themselves.
  if (zeros(0, 12) && !zeros(12, 15)) return { form: 'IPv4-compatible', addresses: [bytes.slice(12)] };
  // 64:ff9b::a.b.c.d, the well-known NAT64 prefix (RFC 6052).
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) {
    return { form: 'NAT64', addresses: [bytes.slice(12)] };
  }
  // 2002:AABB:CCDD::/48, 6to4 (RFC 3056): the IPv4 address in bits 16-47.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return { form: '6to4', addresses: [bytes.slice(2, 6)] };
  // 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, Teredo (RFC 4380): the server in bits 32-63,
  // the client's mapped address in the last 32 bits, every bit inverted.
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0 && bytes[3] === 0) {
    const client = bytes.slice(12).map((b) => b ^ 0xff);
    return { form: 'Teredo', addresses: [client, bytes.slice(4, 8)] };
  }
  return undefined;
}

const AN: ReadonlySet<AddressKind> = new Set<AddressKind>(['unspecified', 'IETF protocol assignment', 'AS112 DNS', 'AMT relay']);

/** "a private address", "the cloud metadata address", "a private address (NAT64 of 10.0.0.5)". */
export function describeRefusal(verdict: Extract<AddressVerdict, { allowed: false }>): string {
  const article = verdict.kind === 'cloud metadata' ? 'the' : AN.has(verdict.kind) ? 'an' : 'a';
  const inside = verdict.embedded === undefined ? '' : ` (${verdict.embedded.form} of ${verdict.embedded.ipv4})`;
  return `${article} ${verdict.kind} address${inside}`;
}

/** Host names that are loopback by definition (RFC 6761). */
export function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** True for an address (or localhost) only this machine can reach: what a listener bound to it serves. */
export function isLoopbackHost(host: string): boolean {
  if (isLocalhostName(host)) return true;
  const verdict = judgeAddress(host);
  return verdict !== undefined && !verdict.allowed && verdict.kind === 'loopback';
}

// ---------------------------------------------------------------------------
// Parsing: text → 4 or 16 bytes.


/** The address's bytes (4 for IPv4, 16 for IPv6), or undefined when `text` is not an IP address. */
export function parseIpAddress(text: string): Uint8Array | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return v4;
  let bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = bare.indexOf('%');
  if (zone !== -1) bare = bare.slice(0, zone);
  return parseIpv6(bare);
}

function parseIpv4(text: string): Uint8Array | undefined {
  const match = IPV4_PATTERN.exec(text);
  return match === null ? undefined : Uint8Array.from(match.slice(1, 5), Number);
}

function parseIpv6(text: string): Uint8Array | undefined {
  if (!text.includes(':')) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  const words = head.length + tail.length;
  if (halves.length === 2 ? words > 7 : words !== 8) return undefined;
  const bytes = new Uint8Array(16);
  const put = (groups: number[], at: number) => groups.forEach((g, i) => bytes.set([g >> 8, g & 0xff], at + 2 * i));
  put(head, 0);
  put(tail, 16 - 2 * tail.length);
  return bytes;
}

/** The 16-bit groups of one side of "::" (a trailing dotted quad counts as two), or undefined. */
function groupsOf(part: string): number[] | undefined {
  if (part === '') return [];
  const fields = part.split(':');
  const groups: number[] = [];
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (i === fields.length - 1 && field.includes('.')) {
      const v4 = parseIpv4(field);
      if (v4 === undefined) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    } else if (HEX_GROUP.test(field)) {
      groups.push(Number.parseInt(field, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

function formatIpv4(bytes: Uint8Array): string {
  return Array.from(bytes).join('.');
}

function blocks(rows: readonly (readonly [string, AddressKind])[]): Block[] {
  return rows.map(([cidr, kind]) => {
    const [network = '', prefix = ''] = cidr.split('/');
    const bytes = parseIpAddress(network);
    if (bytes === undefined) throw new Error(`address-rule: bad block ${cidr}`);
    return { bytes, prefix: Number(prefix), kind };
  });
}

function contains(block: Block, bytes: Uint8Array): boolean {
  if (block.bytes.length !== bytes.length) return false;
  let bits = block.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((bytes[i] ?? 0) & mask) !== ((block.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}
