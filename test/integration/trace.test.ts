// `switchyard trace` and `GET /v1/trace` against a real `switchyard all` (a child process)
// and a real receiver: one user's calls end delivered, retrying, dead-lettered, filtered by
// `integrations`, by the track filter and by a disabled destination, or invalid; another
// user's calls in the same partitions never show; the CLI and the admin API agree.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaUnavailableError } from '../../src/errors.js';
import { partitionOfKey } from '../../src/kafka/index.js';
import { traceUser } from '../../src/trace/trace.js';
import type { TraceDocument } from '../../src/trace/trace-document.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { killAll, runCli as cli, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { printedUrl, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const PARTITIONS = 3;
const TOKEN = 'trace-test-admin-token-0001';
const WRITE_KEY = 'wk-trace-test-0001';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Another user id whose records share every partition with `userId`'s (so the trace must tell them apart by key). */
function neighbourOf(userId: string): string {
  for (let i = 0; ; i++) {
    const candidate = `u-other-${i}`;
    if (partitionOfKey(Buffer.from(candidate), PARTITIONS) === partitionOfKey(Buffer.from(userId), PARTITIONS)) return candidate;
  }
}

describe('switchyard trace and GET /v1/trace', () => {
  const user = randomName('u-trace');
  const other = neighbourOf(user);
  const anonymous = randomName('anon');
  let receiver: Receiver;
  let daemon: Daemon;
  let file: string;
  let gateway: string;
  let admin: string;

  beforeAll(async () => {
    receiver = await startReceiver();
    receiver.replyWith((request) => {
      const { messageId } = JSON.parse(request.text) as { messageId: string };
      if (messageId === 'm-retry') return { status: 503 };
      if (messageId === 'm-dead') return { status: 400 };
      return { status: 200 };
    });
    file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('trace'), topicPrefix: randomPrefix(), partitions: PARTITIONS },
      gateway: { port: 0, host: '127.0.0.1' },
      admin: { port: 0, host: '127.0.0.1', token: TOKEN },
      // One quick retry, then one that waits: a call that keeps failing stays `retrying`.
      delivery: { retryTiers: ['1s', '1h'] },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks', 'paused'], trackFilter: { blockEvents: ['Debug Ping'] } }],
      destinations: [
        { id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/hooks') }] } },
        { id: 'paused', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: receiver.url('/paused') }] } },
        // Fed by no source.
        { id: 'crm', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/crm') }] } },
      ],
    });
    daemon = await startRole('all', file);
    gateway = `http://127.0.0.1:${String(daemon.logs.find((l) => l.msg === 'gateway listening')?.port)}`;
    admin = `http://127.0.0.1:${String(daemon.logs.find((l) => l.msg === 'admin server listening')?.port)}`;

    const track = (userId: string, messageId: string, event: string, extra: object = {}) => ({ type: 'track', userId, messageId, event, properties: {}, ...extra });
    const response = await fetch(`${gateway}/v1/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}` },
      body: JSON.stringify({
        batch: [
          track(user, 'm-ok', 'Order Completed'),
          track(other, 'm-other', 'Order Completed'),
          track(user, 'm-retry', 'Order Completed'),
          track(user, 'm-dead', 'Order Completed'),
          track(user, 'm-int', 'Order Completed', { integrations: { All: false } }),
          track(user, 'm-ping', 'Debug Ping'),
          { type: 'track', userId: user, messageId: 'm-bad', properties: {} },
          { type: 'page', anonymousId: anonymous, messageId: 'm-anon', name: 'Home' },
        ],
      }),
    });
    expect(response.status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await killAll(daemon ? [daemon] : []);
    await receiver?.close();
  });

  /** GET /v1/trace?query with the admin token (`token` null: none). */
  const get = (query: string, token: string | null = TOKEN) =>
    fetch(`${admin}/v1/trace?${query}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });

  it('says what happened to each call, per destination, and why; the CLI agrees with the admin API', async () => {
    const since = new Date(Date.now() - 3_600_000).toISOString();
    let document: TraceDocument | undefined;
    // The states settle once the deliverer has committed and the retry reached its 1 h tier.
    await waitFor(
      async () => {
        const until = new Date(Date.now() + 3_600_000).toISOString();
        const response = await get(`userId=${encodeURIComponent(user)}&since=${since}&until=${until}`);
        if (response.status !== 200) throw new Error(`${response.status} ${await response.text()}`);
        document = (await response.json()) as TraceDocument;
        const state = (id: string) => document!.messages.find((m) => m.messageId === id)?.destinations[0];
        return state('m-ok')?.state === 'delivered' && state('m-retry')?.attempts === 2 && state('m-dead')?.state === 'dead_lettered';
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'the calls to reach their final states' },
    );
    const doc = document!;
    const url = receiver.url('/hooks');
    expect(Object.keys(doc)).toEqual(['userId', 'since', 'until', 'reasonsFrom', 'messages']);
    expect(doc).toMatchObject({ userId: user, since, reasonsFrom: 'current config' });
    // Oldest first; the other user's call and the anonymous call are not this user's.
    expect(doc.messages.map((m) => m.messageId)).toEqual(['m-ok', 'm-retry', 'm-dead', 'm-int', 'm-ping', 'm-bad']);
    const byId = new Map(doc.messages.map((m) => [m.messageId, m]));
    const disabled = { id: 'paused', state: 'filtered', reason: 'disabled' };
    const unconnected = { id: 'crm', state: 'filtered', reason: 'not_connected' };
    expect(byId.get('m-ok')).toEqual({
      messageId: 'm-ok',
      type: 'track',
      event: 'Order Completed',
      source: 'web',
      receivedAt: expect.stringMatching(ISO),
      destinations: [{ id: 'hooks', state: 'delivered', attempts: 1 }, disabled, unconnected],
    });
    const retry = byId.get('m-retry')!.destinations[0]!;
    // Each failed answer, oldest first (docs/webhooks.md#attempt-history): the receiver sent no body.
    const answer503 = { at: expect.stringMatching(ISO), urlIndex: 0, status: 503, latencyMs: expect.any(Number) };
    expect(retry).toEqual({ id: 'hooks', state: 'retrying', attempts: 2, lastError: `${printedUrl(url)}: 503 Service Unavailable`, nextAttemptAt: expect.stringMatching(ISO), history: [answer503, answer503] });
    const dueInMs = Date.parse(retry.nextAttemptAt!) - Date.now();
    expect(dueInMs).toBeGreaterThan(50 * 60_000);
    expect(dueInMs).toBeLessThanOrEqual(3_600_000);
    const dead = byId.get('m-dead')!.destinations[0]!;
    expect(dead).toEqual({
      id: 'hooks',
      state: 'dead_lettered',
      attempts: 1,
      lastError: `${printedUrl(url)}: 400 Bad Request`,
      deadLetteredAt: expect.stringMatching(ISO),
      history: [{ at: expect.stringMatching(ISO), urlIndex: 0, status: 400, latencyMs: expect.any(Number) }],
    });
    expect(byId.get('m-int')!.destinations).toEqual([{ id: 'hooks', state: 'filtered', reason: 'integrations' }, disabled, unconnected]);
    expect(byId.get('m-ping')).toMatchObject({ event: 'Debug Ping', destinations: [{ id: 'hooks', state: 'filtered', reason: 'track_filter' }, disabled, unconnected] });
    expect(byId.get('m-bad')).toEqual({
      messageId: 'm-bad',
      type: 'track',
      source: 'web',
      receivedAt: expect.stringMatching(ISO),
      invalid: expect.stringMatching(/^missing_event: track call without "event"/),
      destinations: [],
    });
    // What the receiver got agrees: m-ok once, m-retry twice, m-dead once, nothing filtered.
    const sent = receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);
    expect(sent.filter((id) => id === 'm-retry')).toHaveLength(2);
    expect(sent.filter((id) => ['m-int', 'm-ping', 'm-bad'].includes(id))).toEqual([]);

    // The CLI, over the same window: the same document; and the same states for a person.
    const window = ['--since', doc.since, '--until', doc.until];
    const json = await cli(['trace', '--user', user, ...window, '--json', '--config', file]);
    expect(json.err).not.toContain('Error');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual(doc);
    const text = await cli(['trace', '--user', user, ...window, '--config', file]);
    expect(text.code).toBe(0);
    const lines = text.out.split('\n');
    expect(lines[0]).toBe(`calls of user "${user}" received from ${doc.since} until ${doc.until} (filter reasons from the current config)`);
    expect(lines).toContainEqual(expect.stringMatching(/^\S+Z {2}track "Order Completed" {2}source web {2}message m-retry$/));
    expect(lines).toContainEqual(`  hooks   retrying       attempts 2  next attempt ${retry.nextAttemptAt}  last error: ${printedUrl(url)}: 503 Service Unavailable`);
    expect(lines).toContainEqual(`  hooks   dead_lettered  attempts 1  at ${dead.deadLetteredAt}  last error: ${printedUrl(url)}: 400 Bad Request`);
    expect(lines).toContainEqual('  paused  filtered       by disabled');
    expect(lines).toContainEqual('  not connected to source web: crm');
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}invalid: missing_event: /));
    expect(text.out.endsWith('\n6 call(s)\n')).toBe(true);
    // Two CLI runs (each a Node process of its own) besides the wait: generous on a busy machine.
  }, 120_000);

  it('follows one message, and a user known only by anonymousId', async () => {
    const one = (await (await get(`userId=${encodeURIComponent(user)}&messageId=m-retry`)).json()) as TraceDocument;
    expect(one.messages.map((m) => [m.messageId, m.destinations[0]?.state])).toEqual([['m-retry', 'retrying']]);

    const anon = await waitFor(
      async () => {
        const doc = (await (await get(`anonymousId=${anonymous}`)).json()) as TraceDocument;
        return doc.messages[0]?.destinations[0]?.state === 'delivered' ? doc : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'the anonymous call to be delivered' },
    );
    expect(Object.keys(anon)[0]).toBe('anonymousId');
    expect(anon.messages).toEqual([
      {
        messageId: 'm-anon',
        type: 'page',
        source: 'web',
        receivedAt: expect.stringMatching(ISO),
        destinations: [
          { id: 'hooks', state: 'delivered', attempts: 1 },
          { id: 'paused', state: 'filtered', reason: 'disabled' },
          { id: 'crm', state: 'filtered', reason: 'not_connected' },
        ],
      },
    ]);
  });

  it('asks for the token, says what is wrong with a query, and keeps the user id out of the logs', async () => {
    expect((await get(`userId=${user}`, null)).status).toBe(401);
    expect((await get(`userId=${user}`, 'not-the-token-at-all-0000')).status).toBe(401);
    const both = await get(`userId=${user}&anonymousId=${anonymous}`);
    expect(both.status).toBe(400);
    expect(await both.json()).toMatchObject({ success: false, code: 'invalid_request', message: expect.stringContaining('give either userId ID or anonymousId ID') });
    const typo = await get(`user=${user}`);
    expect(await typo.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('unknown parameter "user"') });
    const badTime = await get(`userId=${user}&since=yesterday`);
    expect(await badTime.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('since "yesterday" is not a time') });
    expect((await fetch(`${admin}/v1/trace?userId=${user}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(405);

    // The traces above were logged, by counts only.
    expect(daemon.logs.some((l) => l.msg === 'trace answered')).toBe(true);
    expect(daemon.output()).not.toContain(user);
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    expect(metrics).not.toContain(user);
  });

  it('fails with KafkaUnavailableError naming the brokers when Kafka does not answer', async () => {
    const config = testConfig({
      kafka: { brokers: ['127.0.0.1:9'], clientId: randomName('trace'), topicPrefix: randomPrefix() },
      sources: [{ id: 'web', destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/hooks') }] } }],
    });
    const failed = await traceUser(testRoleDeps(config), { who: { kind: 'userId', id: user }, sinceMs: Date.now() - 3_600_000 }, { connectTimeoutMs: 1_000 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(KafkaUnavailableError);
    expect((failed as Error).message).toContain('(Kafka at 127.0.0.1:9: check kafka.brokers or $KAFKA_BROKERS and that the broker is up, then trace again)');
  });
});
