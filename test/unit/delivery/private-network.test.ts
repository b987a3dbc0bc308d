import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { BLOCKED_ADDRESS_CODE, BlockedAddressError, blockedAddressKind, guardedLookup, refuseLiteralAddress } from '../../../src/delivery/private-network.js';

describe('blockedAddressKind', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.10', 'private'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    // IPv4-mapped IPv6 forms of the IPv4 ranges.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['::ffff:192.168.0.1', 'private'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['[::1]', 'loopback'],
  ])('%s is %s', (address, kind) => {
    expect(blockedAddressKind(address)).toBe(kind);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.255.255',
    '192.169.0.1',
    '11.0.0.1',
    '128.0.0.1',
    '169.253.255.255',
    '169.255.0.1',
    '1.0.0.0',
    '2606:4700:4700::1111',
    '2001:db8::1',
    'fec0::1',
    'fbff::1',
    '::ffff:8.8.8.8',
    'hooks.example.com',
    'localhost',
    '',
  ])('%j is not refused', (address) => {
    expect(blockedAddressKind(address)).toBeUndefined();
  });
});

describe('refuseLiteralAddress', () => {
  it('refuses a host that is a refused address, naming it', () => {
    const error = refuseLiteralAddress('127.0.0.1')!;
    expect(error).toBeInstanceOf(BlockedAddressError);
    expect(error.code).toBe(BLOCKED_ADDRESS_CODE);
    expect(error.message).toBe('not sent: 127.0.0.1, a loopback address; delivery.blockPrivateNetworks refuses it');
    expect(refuseLiteralAddress('[::ffff:a9fe:a9fe]')!.message).toBe(
      'not sent: ::ffff:a9fe:a9fe, the cloud metadata address; delivery.blockPrivateNetworks refuses it',
    );
  });

  it('leaves names and public addresses to connect', () => {
    expect(refuseLiteralAddress('hooks.example.com')).toBeUndefined();
    expect(refuseLiteralAddress('8.8.8.8')).toBeUndefined();
  });
});

describe('guardedLookup', () => {
  /** A resolver that answers from a table, as the socket's own lookup would. */
  const resolver = (table: Record<string, LookupAddress[]>) =>
    ((hostname: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => {
      const found = table[hostname];
      if (found === undefined) callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      else callback(null, found);
    }) as Parameters<typeof guardedLookup>[0];

  const lookup = guardedLookup(
    resolver({
      'public.example': [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
      'rebound.example': [{ address: '10.0.0.5', family: 4 }],
      'mixed.example': [{ address: '93.184.216.34', family: 4 }, { address: '::1', family: 6 }],
    }),
  );

  const call = (hostname: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: number | undefined }>((resolve) => {
      lookup(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
    });

  it('passes allowed addresses on, in the form asked for', async () => {
    expect(await call('public.example', false)).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    const all = await call('public.example', true);
    expect(all.error).toBeNull();
    expect(all.address).toEqual([{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }]);
  });

  it('refuses a name that resolves to a private address, naming both', async () => {
    for (const all of [false, true]) {
      const { error } = await call('rebound.example', all);
      expect(error).toBeInstanceOf(BlockedAddressError);
      expect(error?.message).toBe('not sent: rebound.example resolves to 10.0.0.5, a private address; delivery.blockPrivateNetworks refuses it');
    }
  });

  it('refuses a name when any of its addresses is refused', async () => {
    const { error } = await call('mixed.example', true);
    expect((error as BlockedAddressError).address).toBe('::1');
  });

  it('passes DNS errors on unchanged', async () => {
    expect((await call('nowhere.example', false)).error?.code).toBe('ENOTFOUND');
  });
});
