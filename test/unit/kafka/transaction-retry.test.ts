// How long @platformatic/kafka waits before it asks again inside a transaction
// (src/kafka/transaction.ts): CONCURRENT_TRANSACTIONS, the answer to the first request
// of a transaction opened right after the previous one ended, is asked again within
// milliseconds; every other answer waits as any client request does.
import { describe, expect, it } from 'vitest';
import { ProtocolError, ResponseError } from '@platformatic/kafka';
import { clientRetryDelay, platformaticOptions } from '../../../src/kafka/platformatic-client.js';
import { transactionRetryDelay } from '../../../src/kafka/transaction.js';

const CONCURRENT_TRANSACTIONS = 51;
const NOT_COORDINATOR = 16;
/** The library's error for an answer of `code`, as its retry loop hands it over. */
const answered = (code: number) => new ResponseError(24, 3, { '/topics/0': [code, null] }, {});

describe('transactionRetryDelay', () => {
  it('asks again after 10 ms while the previous transaction ends, doubling up to a second', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => transactionRetryDelay(undefined, 'addPartitionsToTransaction', attempt, 8, answered(CONCURRENT_TRANSACTIONS)));
    expect(waits).toEqual([10, 20, 40, 80, 160, 320, 640, 1_000]);
    expect(transactionRetryDelay(undefined, 'addPartitionsToTransaction', 1, 8, new ProtocolError(CONCURRENT_TRANSACTIONS))).toBe(10);
  });

  it('waits as every client does for any other answer', () => {
    for (const attempt of [1, 2, 5]) {
      expect(transactionRetryDelay(undefined, 'addPartitionsToTransaction', attempt, 8, answered(NOT_COORDINATOR))).toBe(clientRetryDelay(undefined, 'addPartitionsToTransaction', attempt));
    }
    expect(clientRetryDelay(undefined, 'produce', 1)).toBe(200);
  });
});

describe('clientRetryDelay', () => {
  it('asks again at most a second apart, for about 30 s over the 32 retries', () => {
    const waits = Array.from({ length: 32 }, (_, i) => clientRetryDelay(undefined, 'metadata', i + 1));
    expect(waits.slice(0, 5)).toEqual([200, 400, 800, 1_000, 1_000]);
    expect(Math.max(...waits)).toBe(1_000);
    expect(waits.reduce((a, b) => a + b, 0)).toBe(30_400);
    expect(platformaticOptions({ brokers: ['k:9092'], clientId: 'sy', topicPrefix: '', partitions: 1, replicationFactor: 1 }, 'sy').retries).toBe(32);
  });
});
