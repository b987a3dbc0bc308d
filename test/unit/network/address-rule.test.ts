// The address rule of delivery.blockPrivateNetworks as a pure function, over every block
// of the IANA IPv4 and IPv6 special-purpose address registries (first and last address
// of each), the named extras (multicast, reserved, cloud metadata), the addresses just
// outside them, and the IPv6 forms that carry an IPv4 address. No socket is opened here.
import { describe, expect, it } from 'vitest';
import { describeRefusal, isLoopbackHost, judgeAddress, parseIpAddress } from '../../../src/network/address-rule.js';
import type { AddressVerdict } from '../../../src/network/address-rule.js';

const refused = (verdict: AddressVerdict | undefined) => (verdict === undefined || verdict.allowed ? undefined : verdict);

describe('the review findings: each address the old block list let through is refused', () => {
  it.each([
    ['100.100.100.200', 'the cloud metadata address'],
    ['100.64.0.1', 'a carrier-grade NAT address'],
    ['100.127.255.254', 'a carrier-grade NAT address'],
    ['192.0.0.1', 'an IETF protocol assignment address'],
    ['198.18.0.1', 'a benchmarking address'],
    ['198.19.255.255', 'a benchmarking address'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['240.0.0.1', 'a reserved address'],
    ['64:ff9b::a00:5', 'a private address (NAT64 of 10.0.0.5)'],
    ['2002:a00:5::', 'a private address (6to4 of 10.0.0.5)'],
    ['fec0::1', 'a site-local address'],
  ])('%s: %s', (address, text) => {
    const verdict = refused(judgeAddress(address));
    expect(verdict).toBeDefined();
    expect(describeRefusal(verdict!)).toBe(text);
  });
});

describe('IPv4: every block of the special-purpose registry, first and last address', () => {
  it.each([
    // [block, first, last, kind]
    ['0.0.0.0/8 "this network"', '0.0.0.0', '0.255.255.255', 'unspecified'],
    ['10.0.0.0/8 private-use', '10.0.0.0', '10.255.255.255', 'private'],
    ['100.64.0.0/10 shared address space', '100.64.0.0', '100.127.255.255', 'carrier-grade NAT'],
    ['127.0.0.0/8 loopback', '127.0.0.0', '127.255.255.255', 'loopback'],
    ['169.254.0.0/16 link local', '169.254.0.0', '169.254.255.255', 'link-local'],
    ['172.16.0.0/12 private-use', '172.16.0.0', '172.31.255.255', 'private'],
    ['192.0.0.0/24 IETF protocol assignments', '192.0.0.0', '192.0.0.255', 'IETF protocol assignment'],
    ['192.0.0.0/29 IPv4 service continuity', '192.0.0.0', '192.0.0.7', 'IETF protocol assignment'],
    ['192.0.0.8/32 IPv4 dummy address', '192.0.0.8', '192.0.0.8', 'IETF protocol assignment'],
    ['192.0.0.9/32 PCP anycast', '192.0.0.9', '192.0.0.9', 'IETF protocol assignment'],
    ['192.0.0.10/32 TURN anycast', '192.0.0.10', '192.0.0.10', 'IETF protocol assignment'],
    ['192.0.0.170/32 NAT64/DNS64 discovery', '192.0.0.170', '192.0.0.171', 'IETF protocol assignment'],
    ['192.0.2.0/24 TEST-NET-1', '192.0.2.0', '192.0.2.255', 'documentation'],
    ['192.31.196.0/24 AS112-v4', '192.31.196.0', '192.31.196.255', 'AS112 DNS'],
    ['192.52.193.0/24 AMT', '192.52.193.0', '192.52.193.255', 'AMT relay'],
    ['192.88.99.0/24 6to4 relay anycast (deprecated)', '192.88.99.0', '192.88.99.255', '6to4 relay anycast'],
    ['192.88.99.2/32 6a44 relay anycast', '192.88.99.2', '192.88.99.2', '6to4 relay anycast'],
    ['192.168.0.0/16 private-use', '192.168.0.0', '192.168.255.255', 'private'],
    ['192.175.48.0/24 direct delegation AS112', '192.175.48.0', '192.175.48.255', 'AS112 DNS'],
    ['198.18.0.0/15 benchmarking', '198.18.0.0', '198.19.255.255', 'benchmarking'],
    ['198.51.100.0/24 TEST-NET-2', '198.51.100.0', '198.51.100.255', 'documentation'],
    ['203.0.113.0/24 TEST-NET-3', '203.0.113.0', '203.0.113.255', 'documentation'],
    ['224.0.0.0/4 multicast', '224.0.0.0', '239.255.255.255', 'multicast'],
    ['240.0.0.0/4 reserved', '240.0.0.0', '255.255.255.254', 'reserved'],
    ['255.255.255.255/32 limited broadcast', '255.255.255.255', '255.255.255.255', 'broadcast'],
    ['169.254.169.254 cloud metadata (AWS, GCP, Azure IMDS)', '169.254.169.254', '169.254.169.254', 'cloud metadata'],
    ['100.100.100.200 cloud metadata (Alibaba)', '100.100.100.200', '100.100.100.200', 'cloud metadata'],
    ['168.63.129.16 cloud metadata (Azure WireServer)', '168.63.129.16', '168.63.129.16', 'cloud metadata'],
  ])('%s', (_block, first, last, kind) => {
    expect(judgeAddress(first)).toEqual({ allowed: false, kind });
    expect(judgeAddress(last)).toEqual({ allowed: false, kind });
    // The same address as a dual-stack socket may show it.
    expect(refused(judgeAddress(`::ffff:${first}`))).toEqual({ allowed: false, kind, embedded: { form: 'IPv4-mapped', ipv4: first } });
  });

  it.each([
    '1.0.0.0',
    '1.1.1.1',
    '8.8.8.8',
    '9.255.255.255',
    '11.0.0.0',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '168.63.129.15',
    '168.63.129.17',
    '169.253.255.255',
    '169.255.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '191.255.255.255',
    '192.0.1.0',
    '192.0.3.0',
    '192.31.195.255',
    '192.31.197.0',
    '192.88.98.255',
    '192.88.100.0',
    '192.167.255.255',
    '192.169.0.0',
    '198.17.255.255',
    '198.20.0.0',
    '198.51.99.255',
    '198.51.101.0',
    '203.0.112.255',
    '203.0.114.0',
    '223.255.255.255',
  ])('%s, a global unicast address, is allowed', (address) => {
    expect(judgeAddress(address)).toEqual({ allowed: true });
    expect(judgeAddress(`::ffff:${address}`)).toEqual({ allowed: true });
  });
});

describe('IPv6: every block of the special-purpose registry, first and last address', () => {
  it.each([
    ['::1/128 loopback', '::1', '::1', 'loopback'],
    ['::/128 unspecified', '::', '::', 'unspecified'],
    ['64:ff9b:1::/48 local-use IPv4/IPv6 translation', '64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'local-use translation'],
    ['100::/64 discard-only', '100::', '100::ffff:ffff:ffff:ffff', 'discard-only'],
    ['100:0:0:1::/64 dummy prefix', '100:0:0:1::', '100::1:ffff:ffff:ffff:ffff', 'reserved'],
    ['2001::/23 IETF protocol assignments (end)', '2001:2:1::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:1::1/128 PCP anycast', '2001:1::1', '2001:1::1', 'IETF protocol assignment'],
    ['2001:1::2/128 TURN anycast', '2001:1::2', '2001:1::2', 'IETF protocol assignment'],
    ['2001:1::3/128 DNS-SD SRP anycast', '2001:1::3', '2001:1::3', 'IETF protocol assignment'],
    ['2001:2::/48 benchmarking', '2001:2::', '2001:2:0:ffff:ffff:ffff:ffff:ffff', 'benchmarking'],
    ['2001:3::/32 AMT', '2001:3::', '2001:3:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:4:112::/48 AS112-v6', '2001:4:112::', '2001:4:112:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:10::/28 ORCHID (deprecated)', '2001:10::', '2001:1f:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:20::/28 ORCHIDv2', '2001:20::', '2001:2f:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:30::/28 DRIP DETs', '2001:30::', '2001:3f:ffff:ffff:ffff:ffff:ffff:ffff', 'IETF protocol assignment'],
    ['2001:db8::/32 documentation', '2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
    ['2620:4f:8000::/48 direct delegation AS112', '2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff', 'AS112 DNS'],
    ['3fff::/20 documentation', '3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
    ['5f00::/16 SRv6 SIDs', '5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'SRv6 SID'],
    ['fc00::/7 unique-local', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local'],
    ['fe80::/10 link-local', 'fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local'],
    ['fec0::/10 site-local (deprecated)', 'fec0::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'site-local'],
    ['ff00::/8 multicast', 'ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'multicast'],
    ['fd00:ec2::254 cloud metadata (AWS IMDS over IPv6)', 'fd00:ec2::254', 'fd00:ec2::254', 'cloud metadata'],
    ['outside 2000::/3, below', '::2', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
    ['outside 2000::/3, above', '4000::', 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
  ])('%s', (_block, first, last, kind) => {
    expect(judgeAddress(first)).toEqual({ allowed: false, kind });
    expect(judgeAddress(last)).toEqual({ allowed: false, kind });
  });

  it.each(['2000::', '2001:200::', '2001:db7:ffff::1', '2001:db9::1', '2606:4700:4700::1111', '2a00:1450:4001:82a::200e', '2620:4f:7fff::1', '3ffe::1', '3fff:1000::'])(
    '%s, a global unicast address, is allowed',
    (address) => {
      expect(judgeAddress(address)).toEqual({ allowed: true });
    },
  );
});

describe('IPv6 forms that carry an IPv4 address are judged by it', () => {
  it.each([
    ['::ffff:127.0.0.1', 'loopback', 'IPv4-mapped', '127.0.0.1'],
    ['::ffff:7f00:1', 'loopback', 'IPv4-mapped', '127.0.0.1'],
    ['::ffff:a9fe:a9fe', 'cloud metadata', 'IPv4-mapped', '169.254.169.254'],
    ['::127.0.0.1', 'loopback', 'IPv4-compatible', '127.0.0.1'],
    ['::a00:5', 'private', 'IPv4-compatible', '10.0.0.5'],
    ['64:ff9b::10.0.0.5', 'private', 'NAT64', '10.0.0.5'],
    ['64:ff9b::a9fe:a9fe', 'cloud metadata', 'NAT64', '169.254.169.254'],
    ['64:ff9b::6464:64c8', 'cloud metadata', 'NAT64', '100.100.100.200'],
    ['64:ff9b::7f00:1', 'loopback', 'NAT64', '127.0.0.1'],
    ['2002:a00:5::1', 'private', '6to4', '10.0.0.5'],
    ['2002:c0a8:101:5::', 'private', '6to4', '192.168.1.1'],
    ['2002:7f00:1::', 'loopback', '6to4', '127.0.0.1'],
    ['2002::', 'unspecified', '6to4', '0.0.0.0'],
    // Teredo: the client's address is the last 32 bits, inverted (10.0.0.5 = ~f5ff:fffa).
    ['2001:0:4136:e378:8000:63bf:f5ff:fffa', 'private', 'Teredo', '10.0.0.5'],
    // RFC 4380's example client, 192.0.2.45 behind server 65.54.227.120.
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'documentation', 'Teredo', '192.0.2.45'],
    // A public client behind a private Teredo server.
    ['2001:0:a00:5:8000:63bf:f7f7:f7f7', 'private', 'Teredo', '10.0.0.5'],
  ])('%s is %s (%s of %s)', (address, kind, form, ipv4) => {
    expect(judgeAddress(address)).toEqual({ allowed: false, kind, embedded: { form, ipv4 } });
  });

  it.each(['::ffff:8.8.8.8', '::8.8.8.8', '64:ff9b::808:808', '64:ff9b::93.184.216.34', '2002:808:808::1', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'])(
    '%s carries a global IPv4 address: allowed',
    (address) => {
      expect(judgeAddress(address)).toEqual({ allowed: true });
    },
  );

  it('names the form in the refusal', () => {
    expect(describeRefusal(refused(judgeAddress('2001:0:4136:e378:8000:63bf:f5ff:fffa'))!)).toBe('a private address (Teredo of 10.0.0.5)');
    expect(describeRefusal(refused(judgeAddress('::ffff:169.254.169.254'))!)).toBe('the cloud metadata address (IPv4-mapped of 169.254.169.254)');
    expect(describeRefusal({ allowed: false, kind: 'unique-local' })).toBe('a unique-local address');
    expect(describeRefusal({ allowed: false, kind: 'unspecified' })).toBe('an unspecified address');
  });
});

describe('parsing', () => {
  it.each([
    ['127.0.0.1', [127, 0, 0, 1]],
    ['0:0:0:0:0:0:0:1', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]],
    ['1:2:3:4:5:6:7:8', [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]],
    ['1::', [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
    ['::ffff:1.2.3.4', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]],
    ['[fe80::1]', [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]],
    ['fe80::1%eth0', [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]],
    ['ABCD::EF', [0xab, 0xcd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xef]],
  ])('%s', (text, bytes) => {
    expect(Array.from(parseIpAddress(text)!)).toEqual(bytes);
  });

  it.each(['', 'localhost', 'hooks.example.com', '1.2.3', '01.2.3.4', '1.2.3.256', '1.2.3.4.5', '0x7f.0.0.1', ':::1', '1::2::3', '12345::', 'g::1', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7::8', '::ffff:1.2.3', '[::1'])(
    '%j is not an IP address (a name, judged once resolved)',
    (text) => {
      expect(parseIpAddress(text)).toBeUndefined();
      expect(judgeAddress(text)).toBeUndefined();
    },
  );
});

describe('isLoopbackHost (where the admin port may bind without a strong token)', () => {
  it.each(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', 'api.localhost', '::ffff:127.0.0.1'])('%s is loopback', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });

  it.each(['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'switchyard-admin', 'example.com'])('%s is not', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
