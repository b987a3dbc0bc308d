import { MultipleErrors, NetworkError, ResponseError, UserError } from '@platformatic/kafka';
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
  /** A CreateTopics answer with an error code per topic, as @platformatic/kafka's Admin rejects it (after its own tries). */
  const answered = (topics: { name: string; errorCode: number; errorMessage: string | null }[]) => {
    const errors: Record<string, [number, string | null]> = {};
    topics.forEach((t, i) => {
      if (t.errorCode !== 0) errors[`/topics/${i}`] = [t.errorCode, t.errorMessage];
    });
    const response = { throttleTimeMs: 0, topics: topics.map((t) => ({ ...t, topicId: '', numPartitions: -1, replicationFactor: -1, configs: [], topicConfigErrorCode: 0 })) };
    return new MultipleErrors('Creating topics failed.', [new ResponseError(19, 7, errors, response)]);
  };

  it.each([
    ['all made', ['a', 'b'], undefined, { exist: ['a', 'b'], again: [], failed: [] }],
    [
      'per topic: made, made by someone else, transient, refused',
      ['a', 'b', 'c', 'd'],
      answered([
        { name: 'a', errorCode: 0, errorMessage: null },
        { name: 'b', errorCode: 36, errorMessage: "Topic 'b' already exists." },
        { name: 'c', errorCode: 7, errorMessage: null },
        { name: 'd', errorCode: 44, errorMessage: 'Excessively large number of partitions per request.' },
      ]),
      { exist: ['a', 'b'], again: ['c'], failed: [{ topic: 'd', reason: 'POLICY_VIOLATION: Excessively large number of partitions per request.', retriable: false }] },
    ],
    ['a topic the answer does not list is asked again', ['a', 'z'], answered([{ name: 'a', errorCode: 36, errorMessage: null }]), { exist: ['a'], again: ['z'], failed: [] }],
    ['the whole request, transient (the connection lost)', ['a', 'b'], new MultipleErrors('createTopics failed 9 times.', [new NetworkError('Connection closed')]), { exist: [], again: ['a', 'b'], failed: [] }],
    [
      'the whole request, refused: the reason names what the client said',
      ['a'],
      new MultipleErrors('createTopics failed 1 times.', [new UserError('/options/topics must NOT have fewer than 1 items')]),
      { exist: [], again: [], failed: [{ topic: 'a', reason: 'createTopics failed 1 times.: /options/topics must NOT have fewer than 1 items', retriable: false }] },
    ],
  ])('%s', (_, names, error, expected) => {
    expect(createOutcome(names, error)).toEqual(expected);
  });
});
