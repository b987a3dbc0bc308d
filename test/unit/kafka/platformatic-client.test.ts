import { describe, expect, it } from 'vitest';
import { Producer } from '@platformatic/kafka';
import { platformaticOptions, toPlatformaticMessage, toPlatformaticMessages } from '../../../src/kafka/platformatic-client.js';
import * as daemonGuard from '../../../src/kafka/platformatic-send-guard.js';
import * as clientGuard from '../../../packages/client/src/send-guard.js';
import { javaPartition } from '../../support/java-partitioner.js';

const SETTINGS = { brokers: ['k1:9092', 'k2:9092'], clientId: 'sy', topicPrefix: 'switchyard.', partitions: 12, replicationFactor: 1 };

describe('platformaticOptions', () => {
  it('keeps one request in flight per broker, and maps TLS and SASL onto this client', () => {
    const options = platformaticOptions({ ...SETTINGS, ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } }, 'sy-router');
    expect(options).toMatchObject({ clientId: 'sy-router', bootstrapBrokers: ['k1:9092', 'k2:9092'], maxInflights: 1, autocreateTopics: false, tls: {} });
    expect(options.sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'u', password: 'p' });
    expect(platformaticOptions(SETTINGS, 'sy')).not.toHaveProperty('tls');
  });
});

describe('records to and from @platformatic/kafka', () => {
  it('writes keys, values, headers and timestamps as bytes', () => {
    const message = toPlatformaticMessage('calls', { key: 'user-1', value: '{"a":1}', headers: { 'source-id': 'web', attempt: Buffer.from('0'), gone: undefined }, timestamp: '1700000000000' });
    expect(message.key).toEqual(Buffer.from('user-1'));
    expect(message.value).toEqual(Buffer.from('{"a":1}'));
    expect(message.timestamp).toBe(1_700_000_000_000n);
    const headers = message.headers as Map<Buffer, Buffer>;
    expect([...headers].map(([k, v]) => [k.toString(), v.toString()])).toEqual([
      ['source-id', 'web'],
      ['attempt', '0'],
    ]);
    expect(toPlatformaticMessage('calls', { key: null, value: null })).toEqual({ topic: 'calls' });
  });

  it('converts a record sent to several topics once, and keeps every topic\'s order', () => {
    const shared = { key: 'user-1', value: 'body', headers: { 'source-id': 'web', 'message-id': Buffer.from('m-1') }, timestamp: '1700000000000' };
    const other = { key: 'user-2', value: 'other', headers: { 'source-id': 'web' } };
    const messages = toPlatformaticMessages([
      { topic: 'd1', messages: [shared, other] },
      { topic: 'd2', messages: [shared] },
    ]);
    expect(messages.map((m) => [m.topic, m.value?.toString()])).toEqual([
      ['d1', 'body'],
      ['d1', 'other'],
      ['d2', 'body'],
    ]);
    expect(messages[2]!.headers).toBe(messages[0]!.headers);
    expect(messages[2]!.key).toBe(messages[0]!.key);
    expect(messages[2]!.timestamp).toBe(1_700_000_000_000n);
    expect(messages[1]!.headers).not.toBe(messages[0]!.headers);
    // Header names are encoded once, whichever record carries them.
    const names = (i: number) => [...(messages[i]!.headers as Map<Buffer, Buffer>).keys()];
    expect(names(1)[0]).toBe(names(0)[0]);
    expect(names(0).map(String)).toEqual(['source-id', 'message-id']);
  });

  it('hashes a key sent to several topics once, to the partition kafkajs and the Java client pick', () => {
    const keys = ['user-1', 'user-2', 'anon-ä', 'x'.repeat(40)];
    const records = keys.map((key) => ({ key, value: 'v' }));
    const messages = toPlatformaticMessages([
      { topic: 'd1', messages: records },
      { topic: 'd2', messages: records },
    ]);
    // This client takes the number modulo the topic's partition count when it sends.
    const expected = keys.map((key) => javaPartition(Buffer.from(key), 6));
    expect(messages.map((m) => m.partition! % 6)).toEqual([...expected, ...expected]);
    const unhashed = [{ key: null, value: 'v' }, { key: 'k', value: 'v', partition: 2 }];
    expect(toPlatformaticMessages([{ topic: 'd1', messages: unhashed }, { topic: 'd2', messages: unhashed }]).map((m) => m.partition)).toEqual([undefined, 2, undefined, 2]);
  });

  it('refuses a repeated header rather than keep one of its values', () => {
    expect(() => toPlatformaticMessage('calls', { value: 'x', headers: { h: ['a', 'b'] } })).toThrow(/header h .*several values/);
  });
});

// The client package has its own copy of the check (so that it builds alone): both run every case.
// test/integration/send-metadata-check.test.ts runs it on a real producer and broker.
describe.each([
  ['the daemon', daemonGuard],
  ['the client package', clientGuard],
])('the check of the metadata a send reads (%s)', (_who, { checkSendMetadata, unusableTopics, METADATA_REFRESH_MS, LIBRARY_METADATA_MAX_AGE_MS }) => {
  const leaders = (...ids: number[]) => ({ partitionsCount: ids.length, partitions: ids.map((leader) => ({ leader })) });

  it.each([
    ['every topic with a leader per partition', { a: leaders(1, 2), b: leaders(1) }, []],
    ['a topic missing from the answer (a broker restarting)', { a: leaders(1) }, ['b']],
    ['a topic with no partitions', { a: leaders(1), b: { partitionsCount: 0, partitions: [] } }, ['b']],
    ['a partition without a leader', { a: leaders(1, -1), b: leaders(1) }, ['a']],
    ['a partition missing from the list', { a: { partitionsCount: 2, partitions: [{ leader: 1 }] }, b: leaders(1) }, ['a']],
  ])('%s', (_, topics, unusable) => {
    expect(unusableTopics(['a', 'b'], { topics: new Map(Object.entries(topics)) })).toEqual(unusable);
  });

  /** A client with @platformatic/kafka's public metadata() and clearMetadata(), answering from `answer`, recording what it was asked. */
  function client(answer: () => Map<string, ReturnType<typeof leaders>>) {
    return {
      asked: [] as { topics: string[]; metadataMaxAge?: number }[],
      cleared: 0,
      metadata(options: { topics: string[]; metadataMaxAge?: number }) {
        this.asked.push({ ...options, topics: [...options.topics] });
        // As the library does (base.js, #performMetadata): it sorts the array it is given.
        options.topics.sort();
        const known = answer();
        return Promise.resolve({ topics: new Map(options.topics.map((t) => [t, known.get(t)])) });
      },
      clearMetadata() {
        this.cleared += 1;
      },
    };
  }

  it('fails a send whose metadata lacks a topic, with a retriable error, after dropping the cached metadata', async () => {
    let answer = new Map([['a', leaders(1)]]);
    const producer = client(() => answer);
    const topics = ['b', 'a'];
    await expect(checkSendMetadata(producer, topics)).rejects.toMatchObject({ message: expect.stringMatching(/no partition leaders for b\b/), retriable: true, canRetry: true });
    expect(producer.cleared).toBe(1);
    expect(topics).toEqual(['b', 'a']);
    answer = new Map([['a', leaders(1)], ['b', leaders(2)]]);
    await expect(checkSendMetadata(producer, topics)).resolves.toBeUndefined();
    expect(producer.cleared).toBe(1);
    // Entries older than the refresh interval are asked of the broker again.
    expect(producer.asked).toEqual([
      { topics: ['b', 'a'], metadataMaxAge: METADATA_REFRESH_MS },
      { topics: ['b', 'a'], metadataMaxAge: METADATA_REFRESH_MS },
    ]);
  });

  it('fails a send whose metadata has a partition without a leader, and passes on an error of the lookup as it is', async () => {
    const producer = client(() => new Map([['a', leaders(1, -1)]]));
    await expect(checkSendMetadata(producer, ['a'])).rejects.toMatchObject({ retriable: true, canRetry: true });
    expect(producer.cleared).toBe(1);
    const failure = Object.assign(new Error('broker gone'), { canRetry: false });
    const failing = { metadata: () => Promise.reject(failure), clearMetadata: () => undefined };
    await expect(checkSendMetadata(failing, ['a'])).rejects.toBe(failure);
  });

  it("fits the pinned @platformatic/kafka producer, whose own cache outlives the check's refresh", () => {
    const producer = new Producer({ clientId: 'check', bootstrapBrokers: ['127.0.0.1:9'], metadataMaxAge: LIBRARY_METADATA_MAX_AGE_MS });
    expect(typeof producer.metadata).toBe('function');
    expect(typeof producer.clearMetadata).toBe('function');
    expect(LIBRARY_METADATA_MAX_AGE_MS).toBeGreaterThan(10 * METADATA_REFRESH_MS);
    // Type-checked: the library's producer is what the check takes.
    const checked: Parameters<typeof checkSendMetadata>[0] = producer;
    void checked;
    void producer.close();
  });
});
