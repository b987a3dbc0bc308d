// Hostile HTTP at a real `switchyard gateway` process (loopback only): slowloris,
// oversized headers, gzip bombs, a body that claims gigabytes, and thousands of
// connections at once. Each gets a fitting answer (408, 431, 413, 503) with a JSON
// body, none hangs, the gateway keeps serving honest clients meanwhile, its memory
// stays bounded and it never crashes.
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-hostile-0001';
const AUTH = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
const CALL = JSON.stringify({ batch: [{ type: 'track', userId: 'u-1', event: 'Hostile Test' }] });
/** The gateway's own bounds (gateway-service.ts): headers within 10 s, checked every second. */
const HEADERS_TIMEOUT_MS = 10_000;
/** The gateway's pool for requests whose key is in the body (gateway-service.ts, maxInFlightKeyInBody). */
const KEY_IN_BODY_SLOTS = 32;
/** Sockets of the lock-out test: more than the gateway's 4,096 connections. */
const KEYLESS_SOCKETS = 4_200;
/** More RSS than this after the attacks means a body or a connection was held whole. */
const RSS_GROWTH_BOUND_BYTES = 150 * 1024 * 1024;

interface RawAnswer {
  status: number | undefined;
  head: string;
  body: string;
  /** The server closed the connection. */
  closed: boolean;
}

/** Opens a raw connection, writes `first`, and collects what comes back until the server closes or `settle` resolves. */
function rawRequest(port: number, first: string | Buffer): { socket: Socket; answer: Promise<RawAnswer> } {
  const socket = connect(port, '127.0.0.1');
  socket.setNoDelay(true);
  const chunks: Buffer[] = [];
  const answer = new Promise<RawAnswer>((resolve) => {
    const done = (closed: boolean) => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split === -1 ? text : text.slice(0, split);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1];
      resolve({ status: status === undefined ? undefined : Number(status), head, body: split === -1 ? '' : text.slice(split + 4), closed });
    };
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('close', () => done(true));
    socket.once('error', () => undefined);
  });
  socket.write(first);
  return { socket, answer };
}

function post(path: string, body: Buffer | string, headers: Record<string, string> = {}): string {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const lines = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: ${AUTH}`, 'Content-Type: application/json', `Content-Length: ${length}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

describe('hostile HTTP at the gateway', () => {
  let gateway: Daemon;
  let port: number;
  let adminPort: number;

  const rss = async (): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    return Number(/^process_resident_memory_bytes (\d+)/m.exec(text)?.[1]);
  };
  const honestRequest = async (): Promise<number> =>
    (await fetch(`http://127.0.0.1:${port}/v1/batch`, { method: 'POST', headers: { authorization: AUTH, 'content-type': 'application/json' }, body: CALL })).status;

  beforeAll(async () => {
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('hostile'), topicPrefix: randomPrefix(), partitions: 1 },
      gateway: { port: 0, host: '127.0.0.1' },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
    });
    gateway = await startRole('gateway', file);
    port = Number((await gateway.waitForLog((line) => line.msg === 'gateway listening', 'the gateway to listen')).port);
    adminPort = Number((await gateway.waitForLog((line) => line.msg === 'admin server listening', 'the admin port')).port);
    expect(await honestRequest()).toBe(200);
  });

  afterAll(() => {
    gateway?.kill('SIGKILL');
  });

  it('slowloris: connections that trickle their headers get 408 (at the 2 s first-request deadline) and are closed, while honest clients are served', async () => {
    const rssBefore = await rss();
    const attackers = Array.from({ length: 200 }, () => rawRequest(port, 'POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
    let drip = 0;
    const trickle = setInterval(() => {
      drip += 1;
      for (const { socket } of attackers) if (!socket.destroyed) socket.write(`X-Drip-${drip}: a\r\n`);
    }, 500);
    try {
      // Served meanwhile.
      expect(await honestRequest()).toBe(200);
      const answers = await Promise.race([
        Promise.all(attackers.map((a) => a.answer)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('slowloris connections still open')), HEADERS_TIMEOUT_MS + 10_000)),
      ]);
      for (const answer of answers) {
        expect(answer.closed).toBe(true);
        expect(answer.status).toBe(408);
        expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: 'request_timeout' });
      }
    } finally {
      clearInterval(trickle);
      for (const { socket } of attackers) socket.destroy();
    }
    expect(await honestRequest()).toBe(200);
    expect((await rss()) - rssBefore).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
  });

  it('256 connections without a key trickling their bodies cannot starve a request with one (the review\'s finding)', async () => {
    // Headers without Authorization and the start of a body: before the fix each took one
    // of the 256 in-flight slots for up to 30 s, and a request with a valid key got 503.
    const head = `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"batch":[`;
    const attackers = Array.from({ length: 256 }, () => rawRequest(port, head));
    let refused = 0;
    for (const { answer } of attackers) void answer.then((got) => (refused += got.status === 503 ? 1 : 0));
    try {
      // The small pool for keys in the body is full: the rest are refused at once.
      await waitFor(() => refused >= 256 - KEY_IN_BODY_SLOTS, { timeoutMs: 20_000, what: 'the requests over the key-in-body pool to be refused' });
      expect(await honestRequest()).toBe(200);
      const answers = await Promise.race([
        Promise.all(attackers.map((a) => a.answer)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('trickling connections still open')), 30_000)),
      ]);
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((status) => status === 503)).toHaveLength(256 - KEY_IN_BODY_SLOTS);
      // Those in the pool: cut off by the body pace (5 s to the first byte, then 8 KB/s).
      expect(statuses.filter((status) => status === 408)).toHaveLength(KEY_IN_BODY_SLOTS);
      for (const answer of answers) {
        expect(answer.closed).toBe(true);
        expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: answer.status === 503 ? 'overloaded' : 'request_timeout' });
      }
    } finally {
      for (const { socket } of attackers) socket.destroy();
    }
    expect(await honestRequest()).toBe(200);
  });

  it('oversized headers: 431 with a JSON body that names the limit', async () => {
    const { answer } = rawRequest(port, post('/v1/batch', CALL, { 'X-Huge': 'h'.repeat(20_000) }) + CALL);
    const got = await answer;
    expect(got.status).toBe(431);
    expect(JSON.parse(got.body)).toMatchObject({ success: false, code: 'headers_too_large' });
  });

  it('gzip bombs: 413 after inflating no more than the limit, memory bounded', async () => {
    // 256 MiB of zeros, about 250 KB compressed: under the raw limit, far over it inflated.
    const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(500 * 1024);
    const rssBefore = await rss();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => rawRequest(port, Buffer.concat([Buffer.from(post('/v1/batch', bomb, { 'Content-Encoding': 'gzip' })), bomb])).answer),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(413);
      // Whichever comes first as it inflates: the 500 KB or the ratio to what has arrived.
      expect(['request_too_large', 'compression_ratio_too_high']).toContain((JSON.parse(answer.body) as { code: string }).code);
    }
    expect((await rss()) - rssBefore).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
    expect(await honestRequest()).toBe(200);
  });

  it('a body that claims 10 GB: 413 at once and the connection closed, the body never read', async () => {
    const { socket, answer } = rawRequest(port, post('/v1/batch', '').replace('Content-Length: 0', 'Content-Length: 10737418240'));
    socket.write(Buffer.alloc(64 * 1024, 'a'));
    const got = await answer;
    expect(got.status).toBe(413);
    expect(got.closed).toBe(true);
    expect(got.head.toLowerCase()).toContain('connection: close');
  });

  it('3,000 connections at once: each answered 200, or 503 with Retry-After when over the in-flight bound; none hangs', async () => {
    const rssBefore = await rss();
    const request = post('/v1/batch', CALL) + CALL;
    const answers = await Promise.race([
      Promise.all(Array.from({ length: 3_000 }, () => rawRequest(port, request).answer)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('some of the 3,000 requests got no answer within 45 s')), 45_000)),
    ]);
    const statuses = new Map<string, number>();
    for (const answer of answers) statuses.set(String(answer.status), (statuses.get(String(answer.status)) ?? 0) + 1);
    process.stderr.write(`3,000 concurrent connections: ${JSON.stringify(Object.fromEntries(statuses))}\n`);
    for (const answer of answers) {
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 503) {
        expect(answer.head.toLowerCase()).toContain('retry-after:');
        expect(JSON.parse(answer.body)).toMatchObject({ success: false, code: 'overloaded' });
      }
    }
    expect(statuses.get('200') ?? 0).toBeGreaterThan(0);
    expect((await rss()) - rssBefore).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
  });

  it('4,200 keyless sockets that each sent GET /x and then idle: a keyed POST is answered 200 within 5 s (the review\'s lock-out)', async () => {
    // NOTE: this process holds 4,200 sockets and the gateway up to 4,096: each needs
    // `ulimit -n` (inherited by the gateway) well above that.
    const fileLimit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
    if (Number.isFinite(fileLimit) && fileLimit < KEYLESS_SOCKETS + 1_000) {
      throw new Error(`ulimit -n is ${fileLimit}: this test opens ${KEYLESS_SOCKETS} sockets; raise it (ulimit -n 20000) before running the tests`);
    }
    const keyless = Array.from({ length: KEYLESS_SOCKETS }, () => rawRequest(port, 'GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    try {
      await waitFor(() => keyless.every(({ socket }) => !socket.connecting), { timeoutMs: 30_000, intervalMs: 20, what: 'every keyless socket connected or refused' });
      const asked = Date.now();
      // Each attempt on a new connection (fetch's pool may hold one from before); a
      // connection closed unanswered is tried again, as Segment's clients do.
      let attempts = 0;
      await waitFor(async () => {
        attempts += 1;
        return (await rawRequest(port, post('/v1/batch', CALL) + CALL).answer).status === 200;
      }, { timeoutMs: 5_000, intervalMs: 50, what: 'a keyed POST answered 200' });
      const tookMs = Date.now() - asked;
      process.stderr.write(`keyed POST behind ${KEYLESS_SOCKETS} keyless sockets: 200 after ${tookMs} ms, ${attempts} attempt(s)\n`);
      expect(tookMs).toBeLessThan(5_000);
      // None holds a slot: each was answered 404 and closed, 408 when the gateway, busy
      // with the others, read its request past the first-request deadline, or (over the
      // cap of one address) closed as it arrived.
      const answers = await Promise.race([
        Promise.all(keyless.map((k) => k.answer)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('some keyless sockets are still open after 15 s')), 15_000)),
      ]);
      const statuses = new Map<string, number>();
      for (const answer of answers) statuses.set(String(answer.status), (statuses.get(String(answer.status)) ?? 0) + 1);
      process.stderr.write(`${KEYLESS_SOCKETS} keyless sockets: ${JSON.stringify(Object.fromEntries(statuses))}\n`);
      for (const answer of answers) {
        expect(answer.closed).toBe(true);
        expect([404, 408, undefined]).toContain(answer.status);
        if (answer.status !== undefined) expect(answer.head.toLowerCase()).toContain('connection: close');
      }
      expect(statuses.get('404') ?? 0).toBeGreaterThan(0);
    } finally {
      for (const { socket } of keyless) socket.destroy();
    }
  });

  it('is still alive, ready and answering after all of it, and stops cleanly', async () => {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status === 200, { timeoutMs: 10_000, what: 'the gateway to be ready' });
    expect(await honestRequest()).toBe(200);
    expect(gateway.process.exitCode).toBeNull();
    gateway.kill('SIGTERM');
    expect(await gateway.exited).toBe(0);
  });
});
