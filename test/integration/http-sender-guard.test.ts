// `delivery.blockPrivateNetworks` at the socket (http-sender.ts): every form in which a
// URL can name a loopback address (an IPv4 or IPv6 literal, which the socket connects
// to without a DNS lookup; the IPv4-mapped IPv6 form; a name that resolves to it; the
// same over HTTPS) is refused before a TCP connection is opened. No broker needed.
//
// NOTE: only loopback addresses are used: a guard that failed would otherwise send
// traffic to a network this test does not own.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpSender, webhookTarget } from '../../src/delivery/http-sender.js';
import type { HttpSender } from '../../src/delivery/http-sender.js';

let server: Server;
let port: number;
let connections = 0;
let guarded: HttpSender;
let open: HttpSender;

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
});

afterAll(async () => {
  await Promise.allSettled([guarded?.close(), open?.close()]);
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
