// Every attempt of a message, and one message retried by itself, against a real
// `switchyard all` (a child process), the shared broker and a real receiver
// (docs/webhooks.md#attempt-history, docs/cli.md#operator-commands):
// - a message answered 500 "boom: database down", then 503, then 500 "boom again: still
//   down" is dead-lettered after its window; `trace --json`, `GET /v1/trace` and the text
//   form list the three answers in order with status, latency, URL index and body; its
//   dead letter's reason leads with the last answer, and its records carry the history;
// - `replay --destination ID --message MID` moves exactly one letter of several, once; the
//   second run says it was already replayed; `POST /v1/replay` with a messageId does the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TraceDocument } from '../../src/trace/trace-document.js';
import { killAll, runCli as cli, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { printedUrl, staysQuiet, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const TOKEN = 'attempts-test-admin-token-0001';
const WEB_KEY = 'wk-attempts-web-0001';
const SHOP_KEY = 'wk-attempts-shop-0001';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** What the receiver answers the flaky message, attempt by attempt. */
const FLAKY_ANSWERS = [
  { status: 500, body: 'boom: database down' },
  { status: 503, body: '' },
  { status: 500, body: 'boom again: still down' },
];

describe('the attempts of a message, and the replay of one letter', () => {
  const user = randomName('u-att');
  const prefix = randomPrefix();
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  let receiver: Receiver;
  let daemon: Daemon;
  let file: string;
  let gateway: string;
  let admin: string;
  let lettersFixed = false;

  const messageIdOf = (text: string) => (JSON.parse(text) as { messageId: string }).messageId;
  const requestsOf = (messageId: string) => receiver.requests.filter((r) => messageIdOf(r.text) === messageId);

  async function send(writeKey: string, messageIds: string[]): Promise<void> {
    const response = await fetch(`${gateway}/v1/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}` },
      body: JSON.stringify({ batch: messageIds.map((messageId) => ({ type: 'track', userId: user, messageId, event: 'Order Completed', properties: {} })) }),
    });
    expect(response.status).toBe(200);
  }

  const adminFetch = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${admin}${path}`, { method: init.method ?? 'GET', headers: { authorization: `Bearer ${TOKEN}` }, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) });

  beforeAll(async () => {
    kafka = await createTestKafka();
    receiver = await startReceiver();
    receiver.replyWith((request) => {
      const messageId = messageIdOf(request.text);
      if (request.path === '/hooks') {
        const answer = FLAKY_ANSWERS[requestsOf(messageId).length - 1];
        return answer === undefined ? { status: 200 } : { status: answer.status, body: answer.body, headers: { 'x-receiver-secret': 'never-stored' } };
      }
      return lettersFixed ? { status: 200 } : { status: 400, body: `bad payload for ${messageId}` };
    });
    file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('attempts'), topicPrefix: prefix, partitions: 1 },
      gateway: { port: 0, host: '127.0.0.1' },
      admin: { port: 0, host: '127.0.0.1', token: TOKEN },
      // NOTE: attempts at 0, 3 s and 5 s: the third ends at or after the 5 s window and is
      // dead-lettered; the second would have to be 2 s late to miss its turn.
      delivery: { retryTiers: ['3s'], maxRetryWindow: '5s' },
      sources: [
        { id: 'web', writeKey: WEB_KEY, destinations: ['hooks'] },
        { id: 'shop', writeKey: SHOP_KEY, destinations: ['letters'] },
      ],
      destinations: [
        { id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/hooks') }] } },
        // 400 is permanent: each event is dead-lettered after one request.
        { id: 'letters', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/letters') }] } },
      ],
    });
    daemon = await startRole('all', file);
    gateway = `http://127.0.0.1:${String(daemon.logs.find((l) => l.msg === 'gateway listening')?.port)}`;
    admin = `http://127.0.0.1:${String(daemon.logs.find((l) => l.msg === 'admin server listening')?.port)}`;
  }, 120_000);

  afterAll(async () => {
    await killAll(daemon ? [daemon] : []);
    await receiver?.close();
    await kafka?.close();
  });

  it('lists the three failed answers in order in trace and GET /v1/trace, and the dead letter leads with the last', async () => {
    await send(WEB_KEY, ['m-flaky']);
    const doc = await waitFor(
      async () => {
        const response = await adminFetch(`/v1/trace?userId=${encodeURIComponent(user)}&messageId=m-flaky`);
        const document = (await response.json()) as TraceDocument;
        return document.messages[0]?.destinations[0]?.state === 'dead_lettered' ? document : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'm-flaky to be dead-lettered after its three attempts' },
    );
    expect(requestsOf('m-flaky')).toHaveLength(3);
    const url = receiver.url('/hooks');
    const hooks = doc.messages[0]!.destinations[0]!;
    expect(hooks).toMatchObject({ id: 'hooks', state: 'dead_lettered', attempts: 3, deadLetteredAt: expect.stringMatching(ISO) });
    expect(Object.keys(hooks)).toEqual(['id', 'state', 'attempts', 'lastError', 'deadLetteredAt', 'history']);
    // The reason leads with what the receiver answered last: status, then its body.
    expect(hooks.lastError).toBe(`${printedUrl(url)}: 500 Internal Server Error: boom again: still down`);
    const history = hooks.history!;
    expect(history).toEqual([
      { at: expect.stringMatching(ISO), urlIndex: 0, status: 500, latencyMs: expect.any(Number), response: 'boom: database down' },
      { at: expect.stringMatching(ISO), urlIndex: 0, status: 503, latencyMs: expect.any(Number) },
      { at: expect.stringMatching(ISO), urlIndex: 0, status: 500, latencyMs: expect.any(Number), response: 'boom again: still down' },
    ]);
    for (const answer of history) {
      expect(Object.keys(answer).slice(0, 3)).toEqual(['at', 'urlIndex', 'status']);
      expect(Number.isInteger(answer.latencyMs) && answer.latencyMs >= 0 && answer.latencyMs < 5_000).toBe(true);
    }
    // In order, at the times the receiver saw the requests (to the millisecond, give or take the wire).
    const seen = requestsOf('m-flaky').map((r) => r.at);
    history.forEach((answer, i) => {
      expect(Math.abs(Date.parse(answer.at) - seen[i]!)).toBeLessThan(1_000);
      if (i > 0) expect(Date.parse(answer.at)).toBeGreaterThan(Date.parse(history[i - 1]!.at));
    });

    // The records: each retry holds the answers so far, the dead letter all three, with the
    // URL's origin; the receiver's headers never.
    const retries = await kafka.readAll(`${prefix}deliveries.hooks.retry.3s`, { atLeast: 2 });
    const [dead] = await kafka.readAll(`${prefix}deliveries.hooks.dlq`, { atLeast: 1 });
    const origin = new URL(url).origin;
    expect(retries.map((r) => (JSON.parse(r.headers['attempt-history']!) as unknown[]).length)).toEqual([1, 2]);
    const stored = JSON.parse(dead!.headers['attempt-history']!) as Record<string, unknown>[];
    expect(stored.map((a) => [a.urlIndex, a.origin, a.status, a.response])).toEqual([
      [0, origin, 500, 'boom: database down'],
      [0, origin, 503, undefined],
      [0, origin, 500, 'boom again: still down'],
    ]);
    expect(dead!.headers.error).toBe(hooks.lastError);
    expect(JSON.stringify(dead!.headers)).not.toContain('never-stored');

    // The CLI: the same document, and the answers under the destination for a person.
    const window = ['--since', doc.since, '--until', doc.until];
    const json = await cli(['trace', '--user', user, '--message', 'm-flaky', ...window, '--json', '--config', file]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual(doc);
    const text = await cli(['trace', '--user', user, '--message', 'm-flaky', ...window, '--config', file]);
    expect(text.code).toBe(0);
    const lines = text.out.split('\n');
    const at = lines.findIndex((l) => l.startsWith('  hooks  dead_lettered  attempts 3'));
    expect(at).toBeGreaterThan(0);
    expect(lines.slice(at + 1, at + 4)).toEqual([
      `      ${history[0]!.at}  webhooks[0]  500  ${history[0]!.latencyMs} ms  boom: database down`,
      `      ${history[1]!.at}  webhooks[0]  503  ${history[1]!.latencyMs} ms`,
      `      ${history[2]!.at}  webhooks[0]  500  ${history[2]!.latencyMs} ms  boom again: still down`,
    ]);
  }, 120_000);

  it('replay --message puts back exactly that letter, once; a second run says it was already replayed', async () => {
    await send(SHOP_KEY, ['l-1', 'l-2', 'l-3', 'l-4']);
    await waitFor(async () => ((await (await adminFetch('/v1/dead-letters?destination=letters')).json()) as { inRange: number }).inRange === 4, {
      timeoutMs: 60_000,
      what: 'four dead letters of "letters"',
    });
    const listed = await cli(['dlq', 'list', '--destination', 'letters', '--json', '--config', file]);
    const letters = listed.out.trim().split('\n').map((line) => JSON.parse(line) as { messageId: string; error: string; offset: number; partition: number });
    expect(letters.find((l) => l.messageId === 'l-2')!.error).toBe(`${printedUrl(receiver.url('/letters'))}: 400 Bad Request: bad payload for l-2`);
    lettersFixed = true;

    const first = await cli(['replay', '--destination', 'letters', '--message', 'l-2', '--config', file]);
    expect(first.err).toBe('');
    expect(first.code).toBe(0);
    const l2 = letters.find((l) => l.messageId === 'l-2')!;
    expect(first.out).toMatch(/^moved {2}\S+Z {2}l-2 {2}attempts=1 {2}partition=0 {2}offset=\d+ {2}error=/);
    expect(first.out.endsWith('replayed dead letter "l-2" of "letters" back to delivery\n')).toBe(true);
    await waitFor(() => requestsOf('l-2').length === 2, { what: 'l-2 delivered again' });
    expect(messageIdOf(requestsOf('l-2')[1]!.text)).toBe('l-2');

    const second = await cli(['replay', '--destination', 'letters', '--message', 'l-2', '--config', file]);
    expect(second.code).toBe(0);
    expect(second.out).toBe(`dead letter "l-2" of "letters" was already replayed (partition ${l2.partition}, offset ${l2.offset}); nothing moved\n`);

    const unknown = await cli(['replay', '--destination', 'letters', '--message', 'l-nope', '--config', file]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain(`switchyard replay: no dead letter "l-nope" of "letters" in ${prefix}deliveries.letters.dlq; list the letters with switchyard dlq list --destination letters`);

    // The admin API's messageId: the same, once.
    const api = await adminFetch('/v1/replay', { method: 'POST', body: { destination: 'letters', messageId: 'l-3', dryRun: false } });
    expect(api.status).toBe(200);
    expect(await api.json()).toMatchObject({ destination: 'letters', messageId: 'l-3', dryRun: false, count: 1, alreadyReplayed: false, letter: { messageId: 'l-3' } });
    const again = await adminFetch('/v1/replay', { method: 'POST', body: { destination: 'letters', messageId: 'l-3', dryRun: false } });
    expect(await again.json()).toMatchObject({ count: 0, alreadyReplayed: true, letter: { messageId: 'l-3' } });
    const missing = await adminFetch('/v1/replay', { method: 'POST', body: { destination: 'letters', messageId: 'l-nope', dryRun: false } });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ success: false, code: 'not_found' });
    await waitFor(() => requestsOf('l-3').length === 2, { what: 'l-3 delivered again' });

    // Nothing else went back: l-2 and l-3 twice in all, l-1 and l-4 once; the list agrees.
    expect(await staysQuiet(receiver, 1_500)).toBe(true);
    expect(['l-1', 'l-2', 'l-3', 'l-4'].map((id) => requestsOf(id).length)).toEqual([1, 2, 2, 1]);
    const page = (await (await adminFetch('/v1/dead-letters?destination=letters')).json()) as { letters: { messageId: string; replayed: boolean }[] };
    expect(Object.fromEntries(page.letters.map((l) => [l.messageId, l.replayed]))).toEqual({ 'l-1': false, 'l-2': true, 'l-3': true, 'l-4': false });

    // A replay of the rest by range still moves the two left: the single replays did not mark them.
    const rest = await cli(['replay', '--destination', 'letters', '--config', file]);
    expect(rest.code).toBe(0);
    expect(rest.out.endsWith('replayed 2 dead letter(s) of "letters" back to delivery\n')).toBe(true);
    await waitFor(() => requestsOf('l-1').length === 2 && requestsOf('l-4').length === 2, { what: 'l-1 and l-4 delivered again' });
  }, 120_000);
});
