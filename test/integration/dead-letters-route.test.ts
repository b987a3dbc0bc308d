// GET /v1/dead-letters and POST /v1/replay on the admin server, with the operator
// commands' code handed in as main.ts hands it (their reads against Kafka are
// test/integration/console-browser.test.ts's and replay.test.ts's): the range a dry run
// closes, paging, one replay at a time, and the answers when things go wrong.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import type { LetterHandlers } from '../../src/admin/dead-letters-route.js';
import type { DeadLetter } from '../../src/delivery/dlq/dead-letters.js';
import type { ListOptions } from '../../src/delivery/dlq/list-dead-letters.js';
import type { ReplayOptions } from '../../src/delivery/dlq/replay.js';
import { KafkaUnavailableError, ReplayLedgerFullError } from '../../src/errors.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { waitFor } from '../support/wait-for.js';

const TOKEN = 'letters-route-admin-token-01';
const AT = Date.UTC(2026, 4, 1, 11);

const letter = (offset: number): DeadLetter => ({ messageId: `m-${offset}`, deadLetteredAtMs: AT + offset, attempts: 3, error: 'webhooks[0] https://h.test: 503 Service Unavailable', partition: 0, offset: BigInt(offset) });

describe('GET /v1/dead-letters, POST /v1/replay', () => {
  let server: AdminServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start(letters: Partial<LetterHandlers>) {
    server = createAdminServer({
      host: '127.0.0.1',
      port: 0,
      token: () => TOKEN,
      metrics: createMetrics({ defaultMetrics: false }),
      logger: silentLogger(),
      health: () => [],
      letters: {
        destinations: () => ['hooks'],
        list: async () => ({ topic: 'sy.deliveries.hooks.dlq', listed: 0, inRange: 0, remaining: 0, topicExists: true }),
        replay: async () => 0,
        ...letters,
      },
    });
    await server.start();
    const base = `http://127.0.0.1:${server.port()}`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    return {
      base,
      get: (query: string) => fetch(`${base}/v1/dead-letters?${query}`, { headers: auth }),
      post: (body: unknown) => fetch(`${base}/v1/replay`, { method: 'POST', headers: auth, body: typeof body === 'string' ? body : JSON.stringify(body) }),
    };
  }

  it('lists a page and gives the cursor of the next one while letters remain', async () => {
    const asked: ListOptions[] = [];
    const { get } = await start({
      list: async (options) => {
        asked.push(options);
        for (const l of [letter(1), letter(2)]) options.onLetter(l, l.offset === 1n);
        return { topic: 'sy.deliveries.hooks.dlq', listed: 2, inRange: 5, remaining: 4, topicExists: true };
      },
    });
    const res = await get('destination=hooks&limit=2&since=2026-05-01T10:00:00Z&cursor=1777633200000.0.0');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      destination: 'hooks',
      topic: 'sy.deliveries.hooks.dlq',
      topicExists: true,
      since: '2026-05-01T10:00:00.000Z',
      until: null,
      inRange: 5,
      letters: [
        { messageId: 'm-1', deadLetteredAt: '2026-05-01T11:00:00.001Z', attempts: 3, error: 'webhooks[0] https://h.test: 503 Service Unavailable', offset: 1, partition: 0, replayed: true },
        { messageId: 'm-2', deadLetteredAt: '2026-05-01T11:00:00.002Z', attempts: 3, error: 'webhooks[0] https://h.test: 503 Service Unavailable', offset: 2, partition: 0, replayed: false },
      ],
      nextCursor: `${AT + 2}.0.2`,
    });
    expect(asked).toEqual([expect.objectContaining({ destinationId: 'hooks', limit: 2, range: { sinceMs: Date.UTC(2026, 4, 1, 10) }, after: { deadLetteredAtMs: 1777633200000, partition: 0, offset: 0n } })]);
  });

  it('closes an open range at the time of the dry run and says so; the confirm with those bounds moves that range', async () => {
    const asked: ReplayOptions[] = [];
    const { post } = await start({
      replay: async (options) => {
        asked.push(options);
        return 3;
      },
    });
    const before = Date.now();
    const dry = (await (await post({ destination: 'hooks', since: '2026-05-01T10:00:00Z', dryRun: true })).json()) as { until: string; count: number };
    expect(dry).toMatchObject({ destination: 'hooks', dryRun: true, since: '2026-05-01T10:00:00.000Z', limit: null, count: 3 });
    expect(Date.parse(dry.until)).toBeGreaterThanOrEqual(before);
    expect(asked[0]).toMatchObject({ destinationId: 'hooks', dryRun: true, range: { sinceMs: Date.UTC(2026, 4, 1, 10), untilMs: Date.parse(dry.until) } });
    const done = await post({ destination: 'hooks', since: '2026-05-01T10:00:00.000Z', until: dry.until, dryRun: false });
    expect(await done.json()).toMatchObject({ dryRun: false, until: dry.until, count: 3 });
    expect(asked[1]).toMatchObject({ dryRun: false, range: { sinceMs: Date.UTC(2026, 4, 1, 10), untilMs: Date.parse(dry.until) } });
  });

  it('runs one replay at a time: another meanwhile gets 429 with Retry-After', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (entered = resolve));
    const { post } = await start({
      replay: async () => {
        entered();
        await held;
        return 1;
      },
    });
    const first = post({ destination: 'hooks', dryRun: false });
    await running;
    const second = await post({ destination: 'hooks', dryRun: true });
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('2');
    release();
    expect((await first).status).toBe(200);
    expect((await post({ destination: 'hooks', dryRun: true })).status).toBe(200);
  });

  it('takes the replay guard before the body is read: of two replays whose bodies arrive late, one runs and one gets 429', async () => {
    let replays = 0;
    const { base } = await start({
      replay: async () => {
        replays += 1;
        return 1;
      },
    });
    const url = new URL(base);
    const body = JSON.stringify({ destination: 'hooks', dryRun: true });
    // Both send their headers; neither body has arrived when the second's headers are read.
    const late = [0, 1].map(() => {
      const chunks: string[] = [];
      let status = 0;
      const req = request({ host: url.hostname, port: url.port, path: '/v1/replay', method: 'POST', agent: false, headers: { authorization: `Bearer ${TOKEN}`, 'content-length': Buffer.byteLength(body) } });
      const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
        req.on('response', (res) => {
          status = res.statusCode ?? 0;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => chunks.push(chunk));
          res.on('end', () => resolve({ status, body: chunks.join('') }));
        });
        req.on('error', reject);
      });
      req.flushHeaders();
      return { req, answered };
    });
    const [first, second] = late as [(typeof late)[0], (typeof late)[0]];
    // The second is refused without its body, at once.
    const busy = await second.answered;
    expect(busy.status).toBe(429);
    expect(JSON.parse(busy.body)).toMatchObject({ code: 'busy' });
    first.req.end(body);
    expect((await first.answered).status).toBe(200);
    second.req.destroy();
    expect(replays).toBe(1);
  });

  it('lists one page at a time; a few more wait their turn, more than that get 429', async () => {
    let running = 0;
    let most = 0;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { get } = await start({
      list: async () => {
        running += 1;
        most = Math.max(most, running);
        await held;
        running -= 1;
        return { topic: 'sy.deliveries.hooks.dlq', listed: 0, inRange: 0, remaining: 0, topicExists: true };
      },
    });
    const pages = [0, 1, 2, 3].map(() => get('destination=hooks'));
    await waitFor(() => running === 1, { timeoutMs: 5_000, what: 'the first list to run' });
    const over = await get('destination=hooks');
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('2');
    release();
    expect((await Promise.all(pages)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(most).toBe(1);
  });

  it('answers Kafka away with 503, a full replay ledger with 409 and what to do, bad input with 400', async () => {
    let failure: Error = new KafkaUnavailableError('Kafka did not answer within 15 s');
    const { get, post } = await start({
      list: async () => {
        throw failure;
      },
      replay: async () => {
        throw failure;
      },
    });
    const away = await get('destination=hooks');
    expect(away.status).toBe(503);
    expect(away.headers.get('retry-after')).toBe('5');
    expect(await away.json()).toEqual({ success: false, code: 'kafka_unavailable', message: "Kafka did not answer (the admin server's log says why); try again once the brokers are up" });
    failure = new ReplayLedgerFullError('sy.deliveries.hooks.dlq', 2, 'hooks');
    const full = await post({ destination: 'hooks', since: '1h', dryRun: false });
    expect(full.status).toBe(409);
    expect(((await full.json()) as { message: string }).message).toContain('(here: POST /v1/replay without since and until)');
    expect((await post('not json')).status).toBe(400);
    expect(await (await get('destination=other')).json()).toEqual({ success: false, code: 'invalid_request', message: 'no destination has id "other" (the config has: hooks)' });
  });
});
