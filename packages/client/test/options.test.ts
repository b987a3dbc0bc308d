import { describe, expect, it } from 'vitest';
import { Analytics, AnalyticsConfigError } from '../src/index.js';
import type { AnalyticsOptions } from '../src/index.js';
import { fakeTransport } from './fake-transport.js';

describe('options that cannot work are refused at construction, saying what to set', () => {
  const kafka = { brokers: ['localhost:9092'], sourceId: 'web' };
  it.each<[string, string, AnalyticsOptions, RegExp]>([
    ['empty write key over HTTP', '', {}, /writeKey is empty: pass the source's write key/],
    ['flushAt 0', 'wk', { flushAt: 0 }, /option flushAt must be a whole number of at least 1; got 0/],
    ['flushAt 2.5', 'wk', { flushAt: 2.5 }, /option flushAt must be a whole number/],
    ['negative flushAfter', 'wk', { flushAfter: -1 }, /option flushAfter must be a whole number of at least 1/],
    ['negative maxRetries', 'wk', { maxRetries: -1 }, /option maxRetries must be a whole number of at least 0/],
    ['maxRetryDelay below minRetryDelay', 'wk', { minRetryDelay: 500, maxRetryDelay: 100 }, /maxRetryDelay must be a whole number of at least 500/],
    ['endpoint and kafka', 'wk', { endpoint: 'http://localhost:8080', kafka }, /set only one of endpoint \(HTTP\), kafka/],
    ['endpoint not a URL', 'wk', { endpoint: 'gateway:8080' }, /endpoint .* (is not a URL|must start with http)/],
    ['kafka without brokers', '', { kafka: { ...kafka, brokers: [] } }, /kafka\.brokers must list at least one broker as "host:port"/],
    ['kafka without sourceId', '', { kafka: { ...kafka, sourceId: '' } }, /kafka\.sourceId must be the id of this source/],
    ['kafka with an empty topic', '', { kafka: { ...kafka, topic: '' } }, /kafka\.topic must be the calls topic/],
  ])('%s', (_name, writeKey, options, message) => {
    let thrown: unknown;
    try {
      new Analytics(writeKey, options);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AnalyticsConfigError);
    expect(thrown).toMatchObject({ code: 'bad_option', retriable: false });
    expect((thrown as Error).message).toMatch(message);
  });

  it('a write key that is not a string', () => {
    expect(() => new Analytics(undefined as never)).toThrow(AnalyticsConfigError);
  });

  it('the Kafka transport and a custom transport need no write key', async () => {
    const viaKafka = new Analytics('', { kafka });
    await viaKafka.close(); // nothing queued: never connects
    const custom = new Analytics('', { transport: fakeTransport() });
    await custom.close();
  });
});
