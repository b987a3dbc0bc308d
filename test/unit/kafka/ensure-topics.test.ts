import { describe, expect, it } from 'vitest';
import { MAX_PARTITIONS_PER_CREATE, createChunks, createOutcome } from '../../../src/kafka/ensure-topics.js';

const topics = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);

describe('createChunks', () => {
  it('stays under the KRaft controller\'s 10,000 partitions per CreateTopics request', () => {
    expect(MAX_PARTITIONS_PER_CREATE).toBeLessThanOrEqual(10_000);
  });

  it.each([
    ['1,000 destinations x 4 topics at 3 partitions (the report)', 4_000, 3, 5_000, [1_666, 1_666, 668]],
    ['few topics: one request', 10, 12, 5_000, [10]],
    ['by partitions, not topics: 120 partitions a topic', 90, 120, 5_000, [41, 41, 8]],
    ['a topic above the bound goes alone', 3, 6_000, 5_000, [1, 1, 1]],
    ['nothing to create', 0, 12, 5_000, []],
  ])('%s', (_, count, partitions, max, sizes) => {
    const chunks = createChunks(topics(count), partitions, max);
    expect(chunks.map((c) => c.length)).toEqual(sizes);
    expect(chunks.flat()).toEqual(topics(count));
    for (const chunk of chunks) if (chunk.length > 1) expect(chunk.length * partitions).toBeLessThanOrEqual(max);
  });
});

describe('createOutcome', () => {
  const perTopic = (errors: { topic: string; type: string; retriable: boolean; message: string }[]) =>
    Object.assign(new Error('Topic creation errors'), { name: 'KafkaJSAggregateError', errors });

  it.each([
    ['all made', ['a', 'b'], undefined, { exist: ['a', 'b'], again: [], failed: [] }],
    [
      'per topic: made, made by someone else, transient, refused',
      ['a', 'b', 'c', 'd'],
      perTopic([
        { topic: 'b', type: 'TOPIC_ALREADY_EXISTS', retriable: false, message: 'Topic with this name already exists' },
        { topic: 'c', type: 'REQUEST_TIMED_OUT', retriable: true, message: 'The request timed out' },
        { topic: 'd', type: 'POLICY_VIOLATION', retriable: false, message: 'Request parameters do not satisfy the configured policy' },
      ]),
      { exist: ['a', 'b'], again: ['c'], failed: [{ topic: 'd', reason: 'POLICY_VIOLATION: Request parameters do not satisfy the configured policy', retriable: false }] },
    ],
    ['the whole request, transient (the connection lost)', ['a', 'b'], Object.assign(new Error('Connection closed'), { retriable: true }), { exist: [], again: ['a', 'b'], failed: [] }],
    [
      'the whole request, refused',
      ['a'],
      Object.assign(new Error('Invalid topics array'), { retriable: false }),
      { exist: [], again: [], failed: [{ topic: 'a', reason: 'Invalid topics array', retriable: false }] },
    ],
  ])('%s', (_, names, error, expected) => {
    expect(createOutcome(names, error)).toEqual(expected);
  });
});
