// The client's Kafka transport against the real broker: calls land in the calls
// topic keyed as the gateway keys them, with the source-id header and the call JSON.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Analytics } from 'switchyard-client';
import { parseCallBytes, renderBody, withMessageId } from '../../src/calls/index.js';
import { createTestKafka, randomPrefix, testBrokers } from '../support/kafka.js';

let kafka: Awaited<ReturnType<typeof createTestKafka>>;

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  await kafka.close();
});

describe('Kafka transport', () => {
  it('every call type lands in the calls topic: key userId else anonymousId, header source-id, the call JSON', async () => {
    const topic = `${randomPrefix()}calls`;
    await kafka.createTopic(topic, 3);
    const analytics = new Analytics('', { kafka: { brokers: testBrokers(), topic, sourceId: 'web' }, flushAt: 4 });
    const sent = [
      analytics.identify({ userId: 'u-1', traits: { plan: 'pro' } }),
      analytics.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 99.5 } }),
      analytics.page({ anonymousId: 'anon-7', name: 'Pricing', properties: { path: '/pricing' } }),
      analytics.screen({ userId: 'u-2', name: 'Home' }),
      analytics.group({ userId: 'u-2', groupId: 'g-1', traits: { name: 'Acme' } }),
      analytics.alias({ userId: 'u-1', previousId: 'anon-7', timestamp: '2026-05-01T12:00:00.000Z' }),
      analytics.track({ anonymousId: 'anon-7', userId: '', event: 'Signed Up', integrations: { All: false, Webhooks: true } }),
    ];
    await analytics.close();

    const messages = await kafka.readAll(topic, { atLeast: sent.length, timeoutMs: 20_000 });
    expect(messages).toHaveLength(sent.length);
    const byId = new Map(messages.map((m) => [JSON.parse(m.text).messageId as string, m]));
    expect([...byId.keys()].sort()).toEqual([...sent].sort());

    const expectedKeys = ['u-1', 'u-1', 'anon-7', 'u-2', 'u-2', 'u-1', 'anon-7'];
    sent.forEach((id, i) => {
      const message = byId.get(id)!;
      expect(message.key, id).toBe(expectedKeys[i]);
      expect(message.headers).toEqual({ 'source-id': 'web' });
    });

    // One key, one partition: a user's calls stay in order.
    for (const key of new Set(expectedKeys)) {
      expect(new Set(messages.filter((m) => m.key === key).map((m) => m.partition)).size).toBe(1);
    }

    // The value is the call JSON (no write key, no envelope) that the router parses and renders.
    const alias = JSON.parse(byId.get(sent[5]!)!.text) as Record<string, unknown>;
    expect(alias).toEqual({
      type: 'alias',
      userId: 'u-1',
      messageId: sent[5],
      timestamp: '2026-05-01T12:00:00.000Z',
      previousId: 'anon-7',
      context: { library: { name: 'switchyard-client', version: expect.any(String) } },
    });
    for (const message of messages) {
      expect(message.text).not.toContain('writeKey');
      const parsed = parseCallBytes(message.value);
      expect(parsed.ok, message.text).toBe(true);
      if (parsed.ok) expect(() => renderBody(withMessageId(parsed.call, 'unused'), Date.now())).not.toThrow();
    }
    expect(JSON.parse(byId.get(sent[6]!)!.text)).not.toHaveProperty('userId');
    const track = byId.get(sent[1]!)!;
    const parsedTrack = parseCallBytes(track.value);
    expect(parsedTrack.ok && renderBody(withMessageId(parsedTrack.call, 'unused'), 0)).toBe(
      `{"version":1,"type":"track","userId":"u-1","messageId":"${sent[1]}","timestamp":"${JSON.parse(track.text).timestamp}","event":"Order Completed","properties":{"total":99.5},"context":{"library":{"name":"switchyard-client","version":"${JSON.parse(track.text).context.library.version}"}}}`,
    );
  });

  it('a topic that does not exist: the calls are reported with what to do, not lost silently', async () => {
    const topic = `${randomPrefix()}calls`;
    const reported: Error[] = [];
    const analytics = new Analytics('', {
      kafka: { brokers: testBrokers(), topic, sourceId: 'web' },
      maxRetries: 0,
      onError: (error) => reported.push(error),
    });
    const id = analytics.track({ userId: 'u', event: 'e' });
    const error = await analytics.close().catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'retries_exhausted', calls: [expect.objectContaining({ messageId: id })] });
    expect((error as Error).message).toContain(`topic ${topic} does not exist: start the router, which creates it`);
    // close() waited for it, so it was reported there and not to onError.
    expect(reported).toEqual([]);
  });

  it('many calls across batches: each exactly once', async () => {
    const topic = `${randomPrefix()}calls`;
    await kafka.createTopic(topic, 2);
    const analytics = new Analytics('', { kafka: { brokers: testBrokers(), topic, sourceId: 'server' }, flushAt: 50 });
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) ids.push(analytics.track({ userId: `u-${i % 7}`, event: 'Tick', properties: { i, pad: 'z'.repeat(3_000) } }));
    await analytics.close();
    const messages = await kafka.readAll(topic, { atLeast: ids.length, timeoutMs: 30_000 });
    expect(messages.map((m) => JSON.parse(m.text).messageId as string).sort()).toEqual([...ids].sort());
    // Within each key, the order of the calls is kept.
    for (let k = 0; k < 7; k++) {
      const order = messages.filter((m) => m.key === `u-${k}`).map((m) => (JSON.parse(m.text).properties as { i: number }).i);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  });
});
