import { describe, expect, it } from 'vitest';
import { deadLetterHeaders, retryHeaders } from '../../../src/delivery/envelope.js';
import { encodeFinished } from '../../../src/kafka/index.js';
import type { RecordHeaders, ScannedRecord } from '../../../src/kafka/index.js';
import { finishedBy, stagesByMessage } from '../../../src/trace/delivery-stages.js';
import { freshDeliveryHeaders } from '../../../src/runtime/headers.js';

const T0 = Date.UTC(2026, 4, 1, 12);

function record(offset: bigint, timestampMs: number, headers: RecordHeaders, value: string | null = '{}'): ScannedRecord {
  // As kafkajs reads them: values as Buffers.
  const read = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, typeof v === 'string' ? Buffer.from(v) : v]));
  return { partition: 0, offset, key: Buffer.from('u-1'), value: value === null ? null : Buffer.from(value), headers: read, timestamp: String(timestampMs) };
}

const fresh = (messageId: string) => freshDeliveryHeaders({ sourceId: 'web', messageId });

describe('finishedBy', () => {
  it.each([
    ['no commit', undefined, [0n, 5n], []],
    ['never committed (-1)', { offset: '-1', metadata: null }, [0n, 5n], []],
    ['below the committed offset', { offset: '5', metadata: null }, [0n, 4n, 5n, 6n], [0n, 4n]],
    ['listed finished above it in the metadata', { offset: '5', metadata: encodeFinished(5n, [7n, 8n, 12n]) }, [4n, 5n, 6n, 7n, 8n, 9n, 12n], [4n, 7n, 8n, 12n]],
    ['metadata of another writer: only the offset counts', { offset: '5', metadata: 'replayed:1,2' }, [4n, 7n], [4n]],
  ])('%s', (_name, commit, offsets, finished) => {
    const done = finishedBy(commit);
    expect(offsets.filter((o) => done(o))).toEqual(finished);
  });
});

describe('stagesByMessage', () => {
  it('reads each record as the deliverer and dlq list read it, by message id', () => {
    const retried = retryHeaders(fresh('m-1'), { attemptsMade: 2, firstAttemptAtMs: T0, dueAtMs: T0 + 60_000, error: 'https://h.example/x: 503 Service Unavailable' });
    const dead = deadLetterHeaders(fresh('m-2'), { attemptsMade: 3, firstAttemptAtMs: T0, lastAttemptAtMs: T0 + 9_000, error: 'https://h.example/x: 410 Gone' });
    const stages = stagesByMessage([
      { where: 'delivery', records: [record(4n, T0, fresh('m-1')), record(9n, T0, fresh('m-2'))], commit: { offset: '5', metadata: encodeFinished(5n, [9n]) } },
      { where: 'retry', records: [record(0n, T0 + 2_000, retried)], commit: { offset: '0', metadata: null } },
      { where: 'dead_letter', records: [record(0n, T0 + 9_001, dead), record(1n, T0, {}, null)] },
    ]);
    expect([...stages.keys()]).toEqual(['m-1', 'm-2']);
    expect(stages.get('m-1')).toEqual([
      { where: 'delivery', timestampMs: T0, offset: 4n, attemptsMade: 0, finished: true },
      { where: 'retry', timestampMs: T0 + 2_000, offset: 0n, attemptsMade: 2, finished: false, error: 'https://h.example/x: 503 Service Unavailable', dueAtMs: T0 + 60_000 },
    ]);
    expect(stages.get('m-2')).toEqual([
      { where: 'delivery', timestampMs: T0, offset: 9n, attemptsMade: 0, finished: true },
      { where: 'dead_letter', timestampMs: T0 + 9_001, offset: 0n, attemptsMade: 3, finished: false, error: 'https://h.example/x: 410 Gone', deadLetteredAtMs: T0 + 9_000 },
    ]);
  });

  it("reads a retry's and a dead letter's failed answers, without origins", () => {
    const answers = [{ at: '2026-05-01T12:00:00.000Z', urlIndex: 0, origin: 'https://h.example', status: 500, latencyMs: 12, response: 'boom: database down' }];
    const retried = retryHeaders(fresh('m-1'), { attemptsMade: 1, firstAttemptAtMs: T0, dueAtMs: T0 + 1_000, error: 'e', answers });
    const dead = deadLetterHeaders(fresh('m-2'), { attemptsMade: 1, firstAttemptAtMs: T0, lastAttemptAtMs: T0, error: 'e', answers });
    const stages = stagesByMessage([
      { where: 'retry', records: [record(0n, T0, retried)] },
      { where: 'dead_letter', records: [record(0n, T0, dead)] },
    ]);
    const traced = [{ at: '2026-05-01T12:00:00.000Z', urlIndex: 0, status: 500, latencyMs: 12, response: 'boom: database down' }];
    expect(stages.get('m-1')![0]!.history).toEqual(traced);
    expect(stages.get('m-2')![0]!.history).toEqual(traced);
  });

  it('takes the message id from the body when a record has no header (written by hand)', () => {
    const stages = stagesByMessage([{ where: 'delivery', records: [record(0n, T0, {}, '{"messageId":"m-9"}')] }]);
    expect(stages.get('m-9')).toEqual([{ where: 'delivery', timestampMs: T0, offset: 0n, attemptsMade: 0, finished: false }]);
  });
});
