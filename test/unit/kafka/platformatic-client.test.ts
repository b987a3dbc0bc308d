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

// The client package has its own copy of the guard (so that it builds alone): both run every case.
describe.each([
  ['the daemon', daemonGuard],
  ['the client package', clientGuard],
])('the guard of a send against metadata without its topics (%s)', (_who, { guardSendMetadata, unusableTopics }) => {
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

  it('finds the lookup of the pinned @platformatic/kafka producer', () => {
    const producer = new Producer({ clientId: 'guard', bootstrapBrokers: ['127.0.0.1:9'] });
    expect(guardSendMetadata(producer)).toBe(true);
    expect(guardSendMetadata({})).toBe(false);
    void producer.close();
  });

  it('fails a lookup whose answer lacks a topic, with a retriable error, after dropping the cached metadata', async () => {
    const kMetadata = Symbol('plt.kafka.base.metadata');
    let answer = new Map([['a', leaders(1)]]);
    const client = {
      cleared: 0,
      clearMetadata() {
        this.cleared += 1;
      },
      [kMetadata](options: { topics: string[] }, callback: (error: Error | null, metadata?: unknown) => void) {
        callback(null, { topics: new Map(options.topics.map((t) => [t, answer.get(t)])) });
      },
    };
    expect(guardSendMetadata(client)).toBe(true);
    const lookup = (topics: string[]) =>
      new Promise<unknown>((resolve, reject) => client[kMetadata]({ topics }, (error, metadata) => (error ? reject(error) : resolve(metadata))));
    await expect(lookup(['a', 'b'])).rejects.toMatchObject({ message: expect.stringMatching(/no partition leaders for b/), retriable: true, canRetry: true });
    expect(client.cleared).toBe(1);
    answer = new Map([['a', leaders(1)], ['b', leaders(2)]]);
    await expect(lookup(['a', 'b'])).resolves.toMatchObject({ topics: expect.any(Map) });
    expect(client.cleared).toBe(1);
  });
});
