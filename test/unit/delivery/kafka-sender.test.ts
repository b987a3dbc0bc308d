// The record a delivery becomes in a Kafka destination's topic (kafka-sender.ts
// `kafkaRecord`), and what a failed produce comes to (`produceFailure`). Pure.
import { describe, expect, it } from 'vitest';
import { SendTimeoutError } from '../../../src/errors.js';
import { kafkaRecord, produceFailure } from '../../../src/delivery/kafka-sender.js';
import type { KafkaTarget } from '../../../src/delivery/destination-settings.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import type { InboundRecord } from '../../../src/kafka/index.js';

const BODY = '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{"plan":"pro"}}';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function delivery(headers: Record<string, string>, value: string | null = BODY): InboundRecord {
  return {
    topic: 'sy.deliveries.lake',
    partition: 0,
    offset: '7',
    key: Buffer.from('u-1'),
    value: value === null ? null : Buffer.from(value, 'utf8'),
    headers: Object.fromEntries(Object.entries(headers).map(([name, text]) => [name, Buffer.from(text)])),
    // 2026-05-01T12:00:01.000Z
    timestamp: '1777636801000',
  };
}

const target = (more: Partial<KafkaTarget> = {}): KafkaTarget => ({ topic: 'lake', key: 'userId', value: 'body', headers: {}, origin: 'kafka:lake', ...more });
const text = (headers: unknown) => Object.fromEntries(Object.entries(headers as Record<string, Buffer | string>).map(([name, v]) => [name, v.toString()]));
const FRESH = { 'source-id': 'web', 'message-id': 'm-1', attempt: '0', 'first-attempt-at': '' };

describe('kafkaRecord', () => {
  it('writes the body as it is, keyed by the delivery key, with message-id, source-id, type (from the header) and traceparent', () => {
    const record = delivery({ ...FRESH, type: 'track', traceparent: TRACEPARENT });
    const out = kafkaRecord(record, readEnvelope(record.headers, record.timestamp), target({ headers: { team: Buffer.from('growth') } }), 'lake');
    expect(out.value).toBe(record.value);
    expect(out.key?.toString()).toBe('u-1');
    expect(text(out.headers)).toEqual({ team: 'growth', 'message-id': 'm-1', 'source-id': 'web', type: 'track', traceparent: TRACEPARENT });
  });

  it('takes the type from the body when the record has no type header, and leaves out what it does not know', () => {
    const record = delivery({ 'message-id': 'm-1' });
    const out = kafkaRecord(record, readEnvelope(record.headers, record.timestamp), target(), 'lake');
    expect(text(out.headers)).toEqual({ 'message-id': 'm-1', type: 'track' });
    const shaped = delivery({ 'message-id': 'm-2' }, '{"kind":"signup"}');
    expect(text(kafkaRecord(shaped, readEnvelope(shaped.headers), target(), 'lake').headers)).toEqual({ 'message-id': 'm-2' });
  });

  it.each<[KafkaTarget['key'], string | null]>([
    ['userId', 'u-1'],
    ['messageId', 'm-1'],
    ['none', null],
  ])('key %s is %j', (key, expected) => {
    const record = delivery(FRESH);
    const out = kafkaRecord(record, readEnvelope(record.headers, record.timestamp), target({ key }), 'lake');
    expect(out.key === null || out.key === undefined ? null : out.key.toString()).toBe(expected);
  });

  it('value call: the routing, then the body spliced in byte for byte', () => {
    const record = delivery({ ...FRESH, type: 'track' });
    const out = kafkaRecord(record, readEnvelope(record.headers, record.timestamp), target({ value: 'call' }), 'lake');
    expect(out.value!.toString()).toBe(`{"type":"track","messageId":"m-1","source":"web","destination":"lake","receivedAt":"2026-05-01T12:00:01.000Z","call":${BODY}}`);
  });

  it('value call: a body that is not JSON goes as a string', () => {
    const record = delivery({ 'message-id': 'm-3' }, 'not json');
    const out = kafkaRecord(record, readEnvelope(record.headers, record.timestamp), target({ value: 'call' }), 'lake');
    expect(JSON.parse(out.value!.toString())).toEqual({ messageId: 'm-3', destination: 'lake', receivedAt: '2026-05-01T12:00:01.000Z', call: 'not json' });
  });
});

describe('produceFailure', () => {
  it('a timeout is retried, with the topic named', () => {
    expect(produceFailure(new SendTimeoutError(5_000, true), 5_000, 'lake')).toMatchObject({ outcome: 'timeout', verdict: 'retryable', reason: 'no acknowledgement from Kafka within 5000 ms (topic lake)' });
  });

  it('a record the broker refuses is permanent; other broker answers are retried', () => {
    const refused = Object.assign(new Error('Received response with error while executing API Produce(v9)'), { errors: [Object.assign(new Error('The request included a message larger than the max message size the server will accept.'), { apiId: 'MESSAGE_TOO_LARGE' })] });
    expect(produceFailure(refused, 5_000, 'lake')).toEqual({
      outcome: 'network',
      verdict: 'permanent',
      reason: 'produce to topic lake failed: MESSAGE_TOO_LARGE: The request included a message larger than the max message size the server will accept.',
    });
    const noLeader = Object.assign(new Error('failed'), { errors: [Object.assign(new Error('no leader'), { apiId: 'NOT_LEADER_OR_FOLLOWER' })] });
    expect(produceFailure(noLeader, 5_000, 'lake')).toMatchObject({ verdict: 'retryable', reason: 'produce to topic lake failed: NOT_LEADER_OR_FOLLOWER: no leader' });
    expect(produceFailure(new Error('socket hang up'), 5_000, 'lake')).toMatchObject({ verdict: 'retryable', reason: 'produce to topic lake failed: socket hang up' });
  });
});
