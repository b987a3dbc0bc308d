// decodeRecords (fetcher.ts): what one partition's fetch answer hands over, on record
// batches encoded and read back by @platformatic/kafka itself (the bytes a broker sends).
import { IS_CONTROL, IS_TRANSACTIONAL, Reader, createRecordsBatch, readRecordsBatches } from '@platformatic/kafka';
import type { RecordsBatch } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import { decodeRecords, hadRoom, recordOffsets } from '../../../src/kafka/fetcher.js';
import type { AskedPartition, FetchPartition } from '../../../src/kafka/fetch-positions.js';
import { partitionKey } from '../../../src/kafka/partition-key.js';
import type { FetchAnswer, FetchAnswerPartition } from '../../../src/kafka/wire.js';

const TOPIC = 'orders';

/** A batch of `values` starting at `firstOffset`, as the fetch answer's decoder reads it. */
function batch(firstOffset: bigint, values: string[], options: { producerId?: bigint; attributes?: number; headers?: [string, string][]; keys?: boolean } = {}): RecordsBatch {
  const messages = values.map((value, i) => ({
    topic: TOPIC,
    value: Buffer.from(value),
    ...(options.keys === false ? {} : { key: Buffer.from(`k-${value}`) }),
    ...(options.headers === undefined ? {} : { headers: new Map(options.headers.map(([n, v]) => [Buffer.from(n), Buffer.from(v)])) }),
    timestamp: 1_700_000_000_000n + BigInt(i),
  }));
  const [read] = readRecordsBatches(Reader.from(createRecordsBatch(messages, { producerId: options.producerId ?? -1n }).buffer));
  return { ...read!, firstOffset, attributes: read!.attributes | (options.attributes ?? 0) };
}

/** A transaction marker (control batch) of `producerId` at `offset`: commit (1) or abort (0). */
function marker(offset: bigint, producerId: bigint, commit: boolean): RecordsBatch {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(commit ? 1 : 0, 2);
  const [read] = readRecordsBatches(Reader.from(createRecordsBatch([{ topic: TOPIC, key, value: Buffer.from([0, 0, 0, 0, 0, 0]) }], { producerId }).buffer));
  return { ...read!, firstOffset: offset, attributes: read!.attributes | IS_CONTROL | IS_TRANSACTIONAL };
}

function answer(records: RecordsBatch[], abortedTransactions: { producerId: bigint; firstOffset: bigint }[] = []): FetchAnswerPartition {
  return { partitionIndex: 0, errorCode: 0, highWatermark: 100n, lastStableOffset: 100n, logStartOffset: 0n, abortedTransactions, preferredReadReplica: -1, records };
}

const offsets = (from: bigint, part: FetchAnswerPartition, readCommitted: boolean) => {
  const { records, next } = decodeRecords(TOPIC, 0, from, part, readCommitted);
  return { offsets: records.map((r) => r.offset), values: records.map((r) => r.value?.toString()), next };
};

/** Producer 7 aborts its transaction at 0-1 (marker at 2); producer 8 commits its own at 3-4 (marker at 5); then 7 commits a new one at 6 (marker at 7). */
function abortedThenCommitted(): FetchAnswerPartition {
  return answer(
    [
      batch(0n, ['aborted-1', 'aborted-2'], { producerId: 7n, attributes: IS_TRANSACTIONAL }),
      marker(2n, 7n, false),
      batch(3n, ['kept-1', 'kept-2'], { producerId: 8n, attributes: IS_TRANSACTIONAL }),
      marker(5n, 8n, true),
      batch(6n, ['kept-3'], { producerId: 7n, attributes: IS_TRANSACTIONAL }),
      marker(7n, 7n, true),
    ],
    [{ producerId: 7n, firstOffset: 0n }],
  );
}

describe('decodeRecords', () => {
  it('hands over every record in offset order; the position moves past the last batch', () => {
    expect(offsets(0n, answer([batch(0n, ['a', 'b']), batch(2n, ['c'])]), false)).toEqual({ offsets: ['0', '1', '2'], values: ['a', 'b', 'c'], next: 3n });
  });

  it('skips a control batch (a commit marker) and passes its offset', () => {
    const part = answer([batch(0n, ['a', 'b'], { producerId: 7n, attributes: IS_TRANSACTIONAL }), marker(2n, 7n, true), batch(3n, ['c'])]);
    expect(offsets(0n, part, true)).toEqual({ offsets: ['0', '1', '3'], values: ['a', 'b', 'c'], next: 4n });
    expect(offsets(0n, part, false)).toEqual({ offsets: ['0', '1', '3'], values: ['a', 'b', 'c'], next: 4n });
  });

  it('an answer of a control batch alone hands over nothing and moves past it', () => {
    expect(offsets(5n, answer([marker(5n, 7n, true)]), true)).toEqual({ offsets: [], values: [], next: 6n });
  });

  it('reading committed, skips the records of an aborted transaction (kept when reading uncommitted)', () => {
    const part = abortedThenCommitted();
    expect(offsets(0n, part, true)).toEqual({ offsets: ['3', '4', '6'], values: ['kept-1', 'kept-2', 'kept-3'], next: 8n });
    expect(offsets(0n, part, false)).toEqual({ offsets: ['0', '1', '3', '4', '6'], values: ['aborted-1', 'aborted-2', 'kept-1', 'kept-2', 'kept-3'], next: 8n });
  });

  it('an aborted transaction interleaved with another producer\'s records skips only its own', () => {
    const part = answer(
      [
        batch(10n, ['aborted-1'], { producerId: 7n, attributes: IS_TRANSACTIONAL }),
        batch(11n, ['plain-1']),
        batch(12n, ['aborted-2'], { producerId: 7n, attributes: IS_TRANSACTIONAL }),
        marker(13n, 7n, false),
        batch(14n, ['plain-2']),
      ],
      [{ producerId: 7n, firstOffset: 10n }],
    );
    expect(offsets(10n, part, true)).toEqual({ offsets: ['11', '14'], values: ['plain-1', 'plain-2'], next: 15n });
  });

  it('skips the records before the asked offset (the broker answers from the start of the batch holding it)', () => {
    const part = answer([batch(20n, ['a', 'b', 'c', 'd']), batch(24n, ['e'])]);
    expect(offsets(22n, part, false)).toEqual({ offsets: ['22', '23', '24'], values: ['c', 'd', 'e'], next: 25n });
  });

  it('an empty answer hands over nothing and leaves the position (a truncated batch reads as none)', () => {
    expect(offsets(30n, answer([]), false)).toEqual({ offsets: [], values: [], next: 30n });
    expect(decodeRecords(TOPIC, 0, 30n, { ...answer([]), records: null }, false)).toEqual({ records: [], next: 30n });
  });

  it('copies key, value, headers (text, repeated names as arrays), timestamp, topic and partition out of the answer', () => {
    const source = batch(0n, ['v'], { headers: [['trace', 't-1'], ['hop', '1'], ['hop', '2']] });
    const { records } = decodeRecords(TOPIC, 3, 0n, answer([source]), false);
    const [record] = records;
    expect(record).toEqual({
      topic: TOPIC,
      partition: 3,
      offset: '0',
      key: Buffer.from('k-v'),
      value: Buffer.from('v'),
      headers: { trace: 't-1', hop: ['1', '2'] },
      timestamp: '1700000000000',
    });
    // Copies: the held record does not keep the answer's buffer alive, nor change with it.
    const answered = source.records[0]!;
    answered.value!.fill(0);
    answered.key!.fill(0);
    expect(record!.value!.toString()).toBe('v');
    expect(record!.key!.toString()).toBe('k-v');
  });

  it('reads each header name afresh where it differs from the name read before at its position (same length, other bytes, other order)', () => {
    const first = decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['a'], { headers: [['message-id', 'm-1'], ['attempt', '0']] })]), false);
    const swapped = decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['b'], { headers: [['attempt', '1'], ['message-id', 'm-2']] })]), false);
    const sameLength = decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['c'], { headers: [['message-iD', 'm-3'], ['attemps', '2']] })]), false);
    const again = decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['d'], { headers: [['message-id', 'm-4'], ['attempt', '3']] })]), false);
    expect(first.records[0]?.headers).toEqual({ 'message-id': 'm-1', attempt: '0' });
    expect(swapped.records[0]?.headers).toEqual({ attempt: '1', 'message-id': 'm-2' });
    expect(sameLength.records[0]?.headers).toEqual({ 'message-iD': 'm-3', attemps: '2' });
    expect(again.records[0]?.headers).toEqual({ 'message-id': 'm-4', attempt: '3' });
  });

  it('reads a header value as text when it is UTF-8 (the same bytes when written again), as copied bytes when it is not', () => {
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    const source = batch(0n, ['v'], { headers: [['source-id', 'web'], ['name', 'Zoë ✓'], ['empty', '']] });
    source.records[0]!.headers.push([Buffer.from('raw'), binary]);
    const { records } = decodeRecords(TOPIC, 0, 0n, answer([source]), false);
    const headers = records[0]!.headers!;
    expect(headers).toEqual({ 'source-id': 'web', name: 'Zoë ✓', empty: '', raw: binary });
    expect(Buffer.from(headers.name as string)).toEqual(Buffer.from('Zoë ✓'));
    source.records[0]!.headers[3]![1]!.fill(0);
    expect(headers.raw).toEqual(Buffer.from([0xff, 0xfe, 0x00, 0x41]));
  });

  it('reads each header value afresh where it differs from the value read before at its position (same length, other bytes)', () => {
    const values = ['web', 'app', 'web', 'wEb', 'web'].map((sourceId) => decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['a'], { headers: [['source-id', sourceId]] })]), false).records[0]!.headers!['source-id']);
    expect(values).toEqual(['web', 'app', 'web', 'wEb', 'web']);
  });

  it('offsets and timestamps past a double\'s exact range stay exact', () => {
    const far = 2n ** 60n + 3n;
    const source = batch(far, ['a', 'b']);
    const { records } = decodeRecords(TOPIC, 0, far + 1n, answer([{ ...source, firstTimestamp: far }]), false);
    expect(records.map((r) => [r.offset, r.timestamp])).toEqual([[(far + 1n).toString(), (far + 1n).toString()]]);
  });

  it('a record without key or headers has key null and no headers', () => {
    const { records } = decodeRecords(TOPIC, 0, 0n, answer([batch(0n, ['v'], { keys: false })]), false);
    expect(records[0]?.key).toBeNull();
    expect(records[0]?.headers).toBeUndefined();
  });
});

describe('recordOffsets', () => {
  it('gives the offsets a committed reader sees (no markers, no aborted records) and the position after the answer, as decodeRecords does', () => {
    const part = abortedThenCommitted();
    expect(recordOffsets(0n, part)).toEqual({ offsets: [3n, 4n, 6n], next: 8n });
    // Asked from 4, the broker answers from the batch holding it, and lists no transaction aborted before.
    const later = answer([batch(3n, ['kept-1', 'kept-2'], { producerId: 8n, attributes: IS_TRANSACTIONAL }), marker(5n, 8n, true), batch(6n, ['kept-3'], { producerId: 7n, attributes: IS_TRANSACTIONAL }), marker(7n, 7n, true)]);
    expect(recordOffsets(4n, later)).toEqual({ offsets: [4n, 6n], next: 8n });
  });
});

describe('hadRoom', () => {
  // Three partitions of one topic asked from offset 0, each with a log ending at 100.
  const one = batch(0n, ['x'.repeat(200)]);
  const size = 12 + one.length;
  const asked = (limits: number[]): AskedPartition[] =>
    limits.map((maxBytes, i) => ({ partition: { key: partitionKey(TOPIC, i) } as FetchPartition, epoch: 0, position: 0n, maxBytes }));
  const answerOf = (parts: RecordsBatch[][], end = 100n): FetchAnswer => ({
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [{ topicId: TOPIC, partitions: parts.map((records, i) => ({ ...answer(records), partitionIndex: i, highWatermark: end, lastStableOffset: end })) }],
  });

  it('names every partition when the limits asked fit in the answer\'s: an empty one of them was truncated by its own limit', () => {
    expect([...hadRoom(answerOf([[one], [], []]), asked([1_000, 100, 100]), 1_200, false)]).toEqual(['0:orders', '1:orders', '2:orders']);
  });

  it('leaves out the partitions after the answer\'s limit was taken: a partition with more counts its whole limit', () => {
    // The first took up to its 1,000 bytes (more waits behind its batch): 200 of 1,200 were
    // left, not the second's 1,000, and the broker may have given it all 200 (a batch cut off).
    expect([...hadRoom(answerOf([[one], [], []]), asked([1_000, 1_000, 100]), 1_200, false)]).toEqual(['0:orders']);
    expect([...hadRoom(answerOf([[one], [], []]), asked([1_000, 100, 100]), 1_200, false)]).toEqual(['0:orders', '1:orders', '2:orders']);
  });

  it('counts only the bytes that came of a partition that reached its end', () => {
    const atEnd = answerOf([[one], [], []], 1n);
    expect([...hadRoom(atEnd, asked([1_000, 1_000, 1_000]), size + 1_000, false)]).toEqual(['0:orders', '1:orders']);
  });
});
