// The client package keeps its own copy of the check of the metadata a send reads
// (packages/client/src/send-guard.ts, a copy of src/kafka/platformatic-send-guard.ts), so
// that it builds alone and its Kafka transport checks its sends as the daemon's producers
// do. test/unit/kafka/platformatic-client.test.ts checks each copy against the expected
// answers of a few cases; here the two are compared with each other: on a table of metadata
// answers that walks every rule of unusableTopics, on generated answers, on the options
// they give the library, and on clients whose public metadata() answers each way.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as daemon from '../../../src/kafka/platformatic-send-guard.js';
import * as client from '../../../packages/client/src/send-guard.js';

type Metadata = Parameters<typeof daemon.unusableTopics>[1];
type TopicEntry = Metadata['topics'] extends Map<string, infer T> ? T : never;

const leaders = (...ids: number[]): TopicEntry => ({ partitionsCount: ids.length, partitions: ids.map((leader) => ({ leader })) });
const answer = (topics: Record<string, TopicEntry>): Metadata => ({ topics: new Map(Object.entries(topics)) });

/** [what, topics asked for, the metadata answer, whether some topic is unusable]. */
const TABLE: [string, string[], Metadata, boolean][] = [
  ['every topic with a leader per partition', ['a', 'b'], answer({ a: leaders(1, 2), b: leaders(3) }), false],
  ['no topic asked for', [], answer({ a: leaders(1) }), false],
  ['a topic asked for twice', ['a', 'a'], answer({ a: leaders(1) }), false],
  ['a topic missing from the answer (a broker restarting)', ['a', 'b'], answer({ a: leaders(1) }), true],
  ['every topic missing', ['a', 'b'], answer({}), true],
  ['a topic whose entry is undefined', ['a'], answer({ a: undefined }), true],
  ['a topic with no partitions', ['a'], answer({ a: { partitionsCount: 0, partitions: [] } }), true],
  ['a negative partition count', ['a'], answer({ a: { partitionsCount: -1, partitions: [] } }), true],
  ['a partition count that is not a number', ['a'], answer({ a: { partitionsCount: Number.NaN, partitions: [] } }), true],
  ['a partition count of undefined', ['a'], answer({ a: { partitionsCount: undefined as unknown as number, partitions: [] } }), true],
  ['a partition without a leader (-1)', ['a'], answer({ a: leaders(1, -1) }), true],
  ['a leader of 0', ['a'], answer({ a: leaders(0) }), false],
  ['a leader that is not a number', ['a'], answer({ a: { partitionsCount: 1, partitions: [{ leader: Number.NaN }] } }), true],
  ['a leader of undefined', ['a'], answer({ a: { partitionsCount: 1, partitions: [{ leader: undefined as unknown as number }] } }), true],
  ['a partition entry of undefined', ['a'], answer({ a: { partitionsCount: 2, partitions: [{ leader: 1 }, undefined] } }), true],
  ['a partition missing from the list', ['a'], answer({ a: { partitionsCount: 2, partitions: [{ leader: 1 }] } }), true],
  ['more partitions listed than counted', ['a'], answer({ a: { partitionsCount: 1, partitions: [{ leader: 1 }, { leader: -1 }] } }), false],
  ['topics the answer has but nobody asked for', ['a'], answer({ a: leaders(1), z: leaders(-1) }), false],
  ['one of three unusable, in the order asked', ['c', 'b', 'a'], answer({ a: leaders(1), b: leaders(-1), c: leaders(2) }), true],
];

/** A client with @platformatic/kafka's public metadata() and clearMetadata(), answering `reply`, counting clearMetadata. */
function fakeClient(reply: (topics: string[]) => { error: Error | null; metadata?: Metadata }) {
  return {
    asked: [] as unknown[],
    cleared: 0,
    metadata(options: { topics: string[]; metadataMaxAge?: number }) {
      this.asked.push(structuredClone(options));
      const { error, metadata } = reply(options.topics);
      return error === null ? Promise.resolve(metadata as Metadata) : Promise.reject(error);
    },
    clearMetadata() {
      this.cleared += 1;
    },
  };
}

/** What a check of `topics` came to, as plain data to compare. */
async function checked(check: typeof daemon.checkSendMetadata, reply: Parameters<typeof fakeClient>[0], topics: string[]) {
  const target = fakeClient(reply);
  const outcome = await check(target, topics).then(
    () => 'passed',
    (error: Error & { retriable?: unknown; canRetry?: unknown }) => ({ message: error.message, retriable: error.retriable, canRetry: error.canRetry }),
  );
  return { asked: target.asked, cleared: target.cleared, outcome };
}

describe("the client's send guard agrees with the daemon's", () => {
  it.each(TABLE)('%s', (_what, topics, metadata, someUnusable) => {
    expect(daemon.unusableTopics(topics, metadata).length > 0).toBe(someUnusable);
    expect(client.unusableTopics(topics, metadata)).toEqual(daemon.unusableTopics(topics, metadata));
  });

  it('on generated metadata answers', () => {
    const leader = fc.oneof(fc.integer({ min: -2, max: 5 }), fc.constantFrom(Number.NaN, undefined));
    const entry = fc.option(
      fc.record({
        partitionsCount: fc.oneof(fc.integer({ min: -1, max: 4 }), fc.constant(Number.NaN)),
        partitions: fc.array(fc.option(fc.record({ leader }), { nil: undefined }), { maxLength: 5 }),
      }),
      { nil: undefined },
    );
    const names = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(fc.array(names, { maxLength: 4 }), fc.dictionary(names, entry), (topics, entries) => {
        const metadata = answer(entries as Record<string, TopicEntry>);
        expect(client.unusableTopics(topics, metadata)).toEqual(daemon.unusableTopics(topics, metadata));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the library the same options', () => {
    expect(client.METADATA_REFRESH_MS).toBe(daemon.METADATA_REFRESH_MS);
    expect(client.LIBRARY_METADATA_MAX_AGE_MS).toBe(daemon.LIBRARY_METADATA_MAX_AGE_MS);
  });

  it.each([
    ['an answer with every topic', ['a', 'b'], () => ({ error: null, metadata: answer({ a: leaders(1), b: leaders(2) }) })],
    ['an answer lacking a topic', ['a', 'b'], () => ({ error: null, metadata: answer({ a: leaders(1) }) })],
    ['an answer with a partition without a leader', ['a'], () => ({ error: null, metadata: answer({ a: leaders(1, -1) }) })],
    ['an error of the lookup, passed on as it is', ['a'], () => ({ error: Object.assign(new Error('broker gone'), { retriable: false }) })],
  ])('answers a check the same: %s', async (_what, topics, reply) => {
    const [fromClient, fromDaemon] = await Promise.all([checked(client.checkSendMetadata, reply, topics), checked(daemon.checkSendMetadata, reply, topics)]);
    expect(fromDaemon.asked).toHaveLength(1);
    expect(fromClient).toEqual(fromDaemon);
  });
});
