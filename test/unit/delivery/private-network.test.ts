import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { BLOCKED_ADDRESS_CODE, BlockedAddressError, guardedLookup, refuseLiteralAddress } from '../../../src/delivery/private-network.js';
import type { ResolveAll } from '../../../src/delivery/private-network.js';

describe('refuseLiteralAddress', () => {
  it('refuses a host that is a refused address, naming it', () => {
    const error = refuseLiteralAddress('127.0.0.1')!;
    expect(error).toBeInstanceOf(BlockedAddressError);
    expect(error.code).toBe(BLOCKED_ADDRESS_CODE);
    expect(error.message).toBe('not sent: 127.0.0.1, a loopback address; delivery.blockPrivateNetworks refuses it');
    expect(refuseLiteralAddress('[::ffff:a9fe:a9fe]')!.message).toBe(
      'not sent: ::ffff:a9fe:a9fe, the cloud metadata address (IPv4-mapped of 169.254.169.254); delivery.blockPrivateNetworks refuses it',
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
    }) as ResolveAll;

  const table = resolver({
    'public.example': [{ address: '93.184.216.34', family: 4 }, { address: '2606:2800:220:1::1', family: 6 }],
    'rebound.example': [{ address: '10.0.0.5', family: 4 }],
    'mixed.example': [{ address: '93.184.216.34', family: 4 }, { address: '::1', family: 6 }],
    'nat64.example': [{ address: '64:ff9b::a9fe:a9fe', family: 6 }],
    'odd.example': [{ address: 'not-an-address', family: 4 }],
  });
  const lookup = guardedLookup({ guard: true, resolve: table });

  const call = (hostname: string, all: boolean, through = lookup) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: number | undefined }>((resolve) => {
      through(hostname, { all }, (error, address, family) => resolve({ error, address, family }));
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

  it('judges the IPv4 address inside a NAT64 address, and refuses what it cannot read (fail closed)', async () => {
    expect((await call('nat64.example', false)).error?.message).toBe(
      'not sent: nat64.example resolves to 64:ff9b::a9fe:a9fe, the cloud metadata address (NAT64 of 169.254.169.254); delivery.blockPrivateNetworks refuses it',
    );
    expect((await call('odd.example', false)).error?.message).toBe(
      'not sent: odd.example resolves to not-an-address, an address the guard cannot read; delivery.blockPrivateNetworks refuses it',
    );
  });

  it('hands every allowed address to connectTo (tests point it at a loopback listener), and checks nothing without the guard', async () => {
    const toLoopback = guardedLookup({ guard: true, resolve: table, connectTo: ({ family }) => ({ address: family === 6 ? '::1' : '127.0.0.1', family }) });
    expect(await call('public.example', false, toLoopback)).toEqual({ error: null, address: '127.0.0.1', family: 4 });
    expect((await call('rebound.example', false, toLoopback)).error).toBeInstanceOf(BlockedAddressError);
    const open = guardedLookup({ guard: false, resolve: table });
    expect(await call('rebound.example', false, open)).toEqual({ error: null, address: '10.0.0.5', family: 4 });
  });

  it('passes DNS errors on unchanged', async () => {
    expect((await call('nowhere.example', false)).error?.code).toBe('ENOTFOUND');
  });
});
