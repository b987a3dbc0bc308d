// `type: kafka` destinations (docs/kafka.md#a-topic-as-a-destination): what loads, the
// defaults, and the path-qualified errors of settings that belong to the other type.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';

function load(destination: Record<string, unknown>) {
  const doc = { sources: [{ id: 'web', destinations: ['lake'] }], destinations: [{ id: 'lake', ...destination }] };
  return parseConfigText(stringify(doc), 'test.yaml', {});
}

function errorsOf(destination: Record<string, unknown>): string[] {
  const result = load(destination);
  return result.ok ? [] : result.errors;
}

describe('a destination of type kafka', () => {
  it('loads a topic with its key, value, headers and another cluster', () => {
    const result = load({
      type: 'kafka',
      settings: {
        topic: 'analytics.events',
        key: 'messageId',
        value: 'call',
        headers: { team: 'growth' },
        cluster: { brokers: ['lake-kafka:9093'], clientId: 'sy-lake', tls: true, sasl: { mechanism: 'scram-sha-512', username: 'sy', password: 'pw' } },
        batch: { maxEvents: 50 },
      },
    });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const { type, settings } = result.config.destinations[0]!;
    expect(type).toBe('kafka');
    expect(settings).toMatchObject({
      topic: 'analytics.events',
      key: 'messageId',
      value: 'call',
      headers: { team: 'growth' },
      cluster: { brokers: ['lake-kafka:9093'], clientId: 'sy-lake', tls: true, sasl: { mechanism: 'scram-sha-512', username: 'sy', password: 'pw' } },
      ordering: 'none',
      webhooks: [],
    });
    expect(settings.batch?.maxEvents).toBe(50);
  });

  it('leaves key, value and cluster out when not given (userId, body, the same cluster)', () => {
    const result = load({ type: 'kafka', settings: { topic: 'events' } });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const { settings } = result.config.destinations[0]!;
    expect([settings.key, settings.value, settings.cluster]).toEqual([undefined, undefined, undefined]);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['without a topic', {}, 'destinations[0].settings.topic: a destination of type kafka needs settings.topic'],
    ['with webhooks', { topic: 'events', webhooks: [{ url: 'https://hooks.example.com/' }] }, 'destinations[0].settings.webhooks: is a setting of webhook destinations'],
    ['with a shared secret', { topic: 'events', sharedSecret: 's3cret' }, 'destinations[0].settings.sharedSecret: is a setting of webhook destinations'],
    ['with a bad topic name', { topic: 'a topic' }, 'destinations[0].settings.topic: "a topic" is not a Kafka topic name'],
    ['with another key', { topic: 'events', key: 'email' }, 'destinations[0].settings.key: must be one of userId, messageId, none'],
    ['with another value', { topic: 'events', value: 'raw' }, 'destinations[0].settings.value: must be one of body, call'],
    ['with a reserved header', { topic: 'events', headers: { 'message-id': 'x' } }, 'destinations[0].settings.headers.message-id: header "message-id" is set by Switchyard'],
    ['with a cluster without brokers', { topic: 'events', cluster: {} }, 'destinations[0].settings.cluster.brokers'],
    ['with a rate limit', { topic: 'events', rateLimit: { requestsPerSecond: 10 } }, 'destinations[0].settings.rateLimit: applies to webhook URLs only'],
    ['with ordering by user keyed by messageId', { topic: 'events', key: 'messageId', ordering: 'user' }, 'destinations[0].settings.ordering: ordering: user keeps'],
    ['with a broker without a port', { topic: 'events', cluster: { brokers: ['lake'] } }, 'destinations[0].settings.cluster.brokers[0]: "lake" must be host:port'],
  ])('is refused %s', (_name, settings, expected) => {
    const errors = errorsOf({ type: 'kafka', settings });
    expect(errors.join('\n')).toContain(expected);
  });

  it('is refused on a webhooks destination for topic settings, and webhooks are still required there', () => {
    expect(errorsOf({ type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/' }], topic: 'events' } }).join('\n')).toContain(
      'destinations[0].settings.topic: is a setting of kafka destinations; set type: kafka, or remove topic',
    );
    expect(errorsOf({ type: 'webhooks', settings: {} }).join('\n')).toContain('destinations[0].settings.webhooks: is required');
  });

  it('names both types when the type is wrong', () => {
    expect(errorsOf({ type: 'sqs', settings: { topic: 'events' } }).join('\n')).toContain('must be "webhooks" or "kafka", got "sqs"');
  });
});
