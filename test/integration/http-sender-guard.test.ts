// `delivery.blockPrivateNetworks` at the socket (http-sender.ts): every form in which a
// URL can name a loopback address (an IPv4 or IPv6 literal, which the socket connects
// to without a DNS lookup; the IPv4-mapped IPv6 form; a name that resolves to it; the
// same over HTTPS) is refused before a TCP connection is opened. Then every other kind
// of refused address, through the sender's test network: a resolver maps a test name to
// the address under test, and every socket is pointed at the loopback listener, so a
// guard that fails shows up as a request there. No broker needed.
//
// NOTE: no packet leaves the machine, even when the guard is wrong: the first part uses
// loopback addresses only, the second connects only where `toListener` says.
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpSender, webhookTarget } from '../../src/delivery/http-sender.js';
import type { HttpSender } from '../../src/delivery/http-sender.js';
import type { ResolveAll } from '../../src/delivery/private-network.js';

let server: Server;
let port: number;
let connections = 0;
let guarded: HttpSender;
let open: HttpSender;
/** The address the test name resolves to in the case under way. */
let answer: LookupAddress = { address: '127.0.0.1', family: 4 };
let guardedTestNet: HttpSender;
let openTestNet: HttpSender;

const TEST_NAME = 'guard-test.invalid';
const testResolver: ResolveAll = (hostname, _options, callback) => {
  if (hostname === TEST_NAME) callback(null, [answer]);
  else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
};
/** Every socket goes to the loopback listener, whatever address it was given. */
const toListener = (): LookupAddress => ({ address: '127.0.0.1', family: 4 });

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  guarded = createHttpSender({ timeoutMs: 2_000, blockPrivateNetworks: true });
  open = createHttpSender({ timeoutMs: 2_000 });
  guardedTestNet = createHttpSender({ timeoutMs: 2_000, blockPrivateNetworks: true, network: { resolve: testResolver, connectTo: toListener } });
  openTestNet = createHttpSender({ timeoutMs: 2_000, network: { resolve: testResolver, connectTo: toListener } });
});

afterAll(async () => {
  await Promise.allSettled([guarded?.close(), open?.close(), guardedTestNet?.close(), openTestNet?.close()]);
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

const send = (sender: HttpSender, url: string) => sender.send(webhookTarget(url), Buffer.from('{}'), { 'content-type': 'application/json' });

describe('the private-network guard at connect time', () => {
  it.each([
    ['http://127.0.0.1:PORT/', 'not sent: 127.0.0.1, a loopback address'],
    ['http://[::1]:PORT/', 'not sent: ::1, a loopback address'],
    ['http://[0:0:0:0:0:0:0:1]:PORT/', 'not sent: ::1, a loopback address'],
    ['http://[::ffff:127.0.0.1]:PORT/', 'not sent: ::ffff:7f00:1, a loopback address'],
    ['http://0.0.0.0:PORT/', 'not sent: 0.0.0.0, an unspecified address'],
    ['http://localhost:PORT/', /^not sent: localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
    ['https://localhost:PORT/', /^not sent: localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
  ])('%s is refused before a connection, outcome blocked', async (template, reason) => {
    const before = connections;
    const result = await send(guarded, template.replace('PORT', String(port)));
    expect(result).toMatchObject({ outcome: 'blocked', verdict: 'permanent' });
    expect('reason' in result && result.reason).toMatch(reason);
    expect(connections).toBe(before);
  });

  it('without the guard the IPv4-mapped form reaches the same receiver (so the cases above would see a leak)', async () => {
    const before = connections;
    expect(await send(open, `http://[::ffff:127.0.0.1]:${port}/`)).toMatchObject({ outcome: '2xx' });
    expect(connections).toBe(before + 1);
  });
});

describe('the guard at connect time, every kind of refused address (sockets pointed at the loopback listener)', () => {
  // One address of each kind the rule refuses (test/unit/network/address-rule.test.ts
  // covers every block), the review's findings among them.
  const REFUSED: readonly [string, number, RegExp][] = [
    ['100.100.100.200', 4, /the cloud metadata address/],
    ['169.254.169.254', 4, /the cloud metadata address/],
    ['100.64.0.1', 4, /carrier-grade NAT/],
    ['10.0.0.5', 4, /a private address/],
    ['192.168.1.1', 4, /a private address/],
    ['192.0.0.1', 4, /IETF protocol assignment/],
    ['198.18.0.1', 4, /benchmarking/],
    ['224.0.0.1', 4, /multicast/],
    ['240.0.0.1', 4, /reserved/],
    ['64:ff9b::a00:5', 6, /a private address \(NAT64 of 10\.0\.0\.5\)/],
    ['2002:a00:5::', 6, /a private address \(6to4 of 10\.0\.0\.5\)/],
    ['2001:0:4136:e378:8000:63bf:f5ff:fffa', 6, /a private address \(Teredo of 10\.0\.0\.5\)/],
    ['::ffff:10.0.0.5', 6, /a private address \(IPv4-mapped of 10\.0\.0\.5\)/],
    ['fec0::1', 6, /site-local/],
    ['fd00::1', 6, /unique-local/],
    ['fe80::1', 6, /link-local/],
  ];

  it.each(REFUSED)('a name resolving to %s gets no connection', async (address, family, reason) => {
    answer = { address, family };
    const before = connections;
    const result = await send(guardedTestNet, `http://${TEST_NAME}:${port}/hook`);
    expect(result).toMatchObject({ outcome: 'blocked', verdict: 'permanent' });
    expect('reason' in result && result.reason).toMatch(reason);
    expect(connections).toBe(before);
  });

  it.each(REFUSED)('the literal %s gets no connection', async (address, family, reason) => {
    const host = family === 6 ? `[${address}]` : address;
    const before = connections;
    const result = await send(guardedTestNet, `http://${host}:${port}/hook`);
    expect(result).toMatchObject({ outcome: 'blocked', verdict: 'permanent' });
    expect('reason' in result && result.reason).toMatch(reason);
    expect(connections).toBe(before);
  });

  it('lets a global address through: the request reaches the listener (where the address was pointed)', async () => {
    answer = { address: '93.184.216.34', family: 4 };
    const before = connections;
    expect(await send(guardedTestNet, `http://${TEST_NAME}:${port}/hook`)).toMatchObject({ outcome: '2xx' });
    expect(connections).toBe(before + 1);
  });

  it('without the guard the same cases reach the listener: a guard that failed would be seen', async () => {
    const before = connections;
    answer = { address: '10.0.0.5', family: 4 };
    expect(await send(openTestNet, `http://${TEST_NAME}:${port}/hook`)).toMatchObject({ outcome: '2xx' });
    expect(await send(openTestNet, `http://[64:ff9b::a00:5]:${port}/hook`)).toMatchObject({ outcome: '2xx' });
    expect(connections).toBeGreaterThanOrEqual(before + 2);
  });
});
