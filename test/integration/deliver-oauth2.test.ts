// `settings.auth.oauth2` against a real broker, a token server and a receiver made here
// on 127.0.0.1 (docs/webhooks.md#authentication): tokens that live 2 s under 64
// requests in flight, a revoked token answered 401 and renewed, a token endpoint that
// is down sending events to their retry tier with outcome `auth`.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createHttpSender } from '../../src/delivery/http-sender.js';
import { TokenSource } from '../../src/delivery/token-source.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const TOKEN_LIFETIME_S = 2;
const CLIENT_SECRET = 'client-secret-5b9e0c';

/** A client credentials token endpoint: `/token` issues `tok-N` living 2 s, `/long/token` tokens living a minute; `/down/token` answers 503. */
interface TokenServer {
  origin: string;
  /** Each token issued, and when it expires. */
  issued: Map<string, number>;
  revoked: Set<string>;
  forms: URLSearchParams[];
  close(): Promise<void>;
}

async function startTokenServer(): Promise<TokenServer> {
  const issued = new Map<string, number>();
  const revoked = new Set<string>();
  const forms: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      if (req.url === '/down/token') {
        res.writeHead(503).end();
        return;
      }
      forms.push(form);
      if (form.get('grant_type') !== 'client_credentials' || form.get('client_id') !== 'switchyard' || form.get('client_secret') !== CLIENT_SECRET) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
        return;
      }
      const token = `tok-${issued.size + 1}`;
      const lifetimeS = req.url === '/long/token' ? 60 : TOKEN_LIFETIME_S;
      issued.set(token, Date.now() + lifetimeS * 1000);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: lifetimeS }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    issued,
    revoked,
    forms,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
let tokens: TokenServer;
let receiver: Receiver;
let unreached: Receiver;
/** Requests the receiver holds at the moment, and the most it held at once. */
let inFlight = 0;
let maxInFlight = 0;
const answers: number[] = [];

function produce(destination: string, ids: readonly string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({ key: id, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

async function count(metric: 'deliveries' | 'deliveryAttempts' | 'authTokenRequests', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

beforeAll(async () => {
  kafka = await createTestKafka();
  tokens = await startTokenServer();
  receiver = await startReceiver();
  unreached = await startReceiver();
  // The receiver checks the token as a resource server would: issued by the token server, not revoked, not expired.
  receiver.reply((req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const expiresAt = token === undefined ? undefined : tokens.issued.get(token);
    const valid = token !== undefined && expiresAt !== undefined && !tokens.revoked.has(token) && Date.now() < expiresAt;
    const status = valid ? 200 : 401;
    answers.push(status);
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    // Held a while, so that 64 requests are in flight at once.
    setTimeout(() => {
      inFlight -= 1;
      res.writeHead(status).end();
    }, 40);
  });
  prefix = randomPrefix();
  const oauth2 = (path: string) => ({ oauth2: { tokenUrl: `${tokens.origin}${path}`, clientId: 'switchyard', clientSecret: CLIENT_SECRET, scope: 'events:write' } });
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('oauth2'), topicPrefix: prefix, partitions: 4 },
    delivery: { timeout: '5s', retryTiers: ['30s'], maxRetryWindow: '5m', concurrencyPerDestination: 64 },
    sources: [{ id: 'web' }],
    destinations: [
      { id: 'oauth', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/in') }], auth: oauth2('/token') } },
      { id: 'revoking', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/in') }], auth: oauth2('/long/token') } },
      { id: 'idp-down', type: 'webhooks', settings: { webhooks: [{ url: unreached.url('/in') }], auth: oauth2('/down/token') } },
    ],
  };
  const config: Config = testConfig(doc, 'deliver-oauth2.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await unreached?.close();
  await tokens?.close();
  await kafka?.close();
});

describe('settings.auth.oauth2', () => {
  it('under 64 requests in flight, tokens of 2 s are fetched at most once per expiry, and every request carries a valid one', async () => {
    const ids = Array.from({ length: 3_000 }, (_, i) => `load-${i}`);
    const started = Date.now();
    await produce('oauth', ids);
    await waitFor(async () => (await count('deliveries', { destination: 'oauth', result: 'delivered' })) === ids.length, { timeoutMs: 90_000, what: 'every event delivered' });
    const elapsed = Date.now() - started;
    expect(maxInFlight).toBeGreaterThanOrEqual(32);
    // NOTE: a token is used for 1.8 s of its 2 (the margin): one request per 1.8 s, and the first.
    expect(elapsed).toBeGreaterThan(2_000);
    expect(tokens.issued.size).toBeGreaterThanOrEqual(2);
    expect(tokens.issued.size).toBeLessThanOrEqual(Math.ceil(elapsed / 1_800) + 1);
    expect(await count('authTokenRequests', { destination: 'oauth', result: 'issued' })).toBe(tokens.issued.size);
    // The form of RFC 6749 section 4.4.2, credentials in the body (clientAuth: body, the default).
    expect(Object.fromEntries(tokens.forms[0]!)).toEqual({ grant_type: 'client_credentials', scope: 'events:write', client_id: 'switchyard', client_secret: CLIENT_SECRET });
    expect(await count('deliveries', { destination: 'oauth', result: 'retry_scheduled' })).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'oauth', outcome: '4xx' })).toBe(0);
  });

  it('a token the receiver answers 401 is renewed once and the request sent again at once, not counted as an attempt', async () => {
    // A token of a minute in use, then revoked at the identity provider.
    await produce('revoking', ['warm-1']);
    await waitFor(async () => (await count('deliveries', { destination: 'revoking', result: 'delivered' })) === 1, { what: 'warm-1 delivered' });
    const before = tokens.issued.size;
    tokens.revoked.add([...tokens.issued.keys()].at(-1)!);
    const rejectedBefore = answers.filter((s) => s === 401).length;
    const ids = Array.from({ length: 40 }, (_, i) => `revoked-${i}`);
    await produce('revoking', ids);
    await waitFor(async () => (await count('deliveries', { destination: 'revoking', result: 'delivered' })) === 1 + ids.length, { what: 'every event delivered' });
    // Several requests saw the 401 at once; one renewal served them all.
    expect(answers.filter((s) => s === 401).length - rejectedBefore).toBeGreaterThanOrEqual(2);
    expect(tokens.issued.size - before).toBe(1);
    expect(await count('authTokenRequests', { destination: 'revoking', result: 'issued' })).toBe(2);
    expect(await count('deliveries', { destination: 'revoking', result: 'retry_scheduled' })).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'revoking', outcome: '4xx' })).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'revoking', outcome: '2xx' })).toBe(1 + ids.length);
  });

  it('a token endpoint that answers 503: no request to the receiver, the event goes to its retry tier with outcome auth, naming the endpoint and status', async () => {
    await produce('idp-down', ['down-1', 'down-2']);
    const retries = await kafka.readAll(`${prefix}deliveries.idp-down.retry.30s`, { atLeast: 2, timeoutMs: 30_000 });
    expect(retries.map((r) => r.headers['message-id']).sort()).toEqual(['down-1', 'down-2']);
    for (const retry of retries) {
      expect(retry.headers.error).toBe(`webhooks[0] ${new URL(unreached.url()).origin}: token endpoint ${tokens.origin} answered 503 Service Unavailable`);
      expect(retry.headers.attempt).toBe('1');
    }
    expect(unreached.requests).toHaveLength(0);
    expect(await count('deliveryAttempts', { destination: 'idp-down', outcome: 'auth' })).toBe(2);
    expect(await count('deliveries', { destination: 'idp-down', result: 'retry_scheduled' })).toBe(2);
    // The failure is held a second: two events at once made one request.
    expect(await count('authTokenRequests', { destination: 'idp-down', result: 'failed' })).toBeGreaterThanOrEqual(1);
  });

  it('the token endpoint passes the address guard: with blockPrivateNetworks a loopback token URL gets no request', async () => {
    const guarded = createHttpSender({ timeoutMs: 2_000, blockPrivateNetworks: true });
    const requestsBefore = tokens.forms.length;
    try {
      const source = new TokenSource({
        config: { tokenUrl: `${tokens.origin}/token`, clientId: 'switchyard', clientSecret: CLIENT_SECRET, clientAuth: 'body' },
        userAgent: 'switchyard/test',
        postForm: (target, form, headers) => guarded.postForm(target, form, headers),
        counted: () => undefined,
      });
      const outcome = await source.token();
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.reason).toMatch(new RegExp(`^token endpoint ${tokens.origin}: .*127\\.0\\.0\\.1.*`));
      expect(tokens.forms.length).toBe(requestsBefore);
    } finally {
      await guarded.close();
    }
  });
});
