// The client package keeps its own copy of the guard of a send against metadata that lacks
// its topics (packages/client/src/send-guard.ts, a copy of src/kafka/platformatic-send-guard.ts),
// so that it builds alone and its Kafka transport applies the guard the daemon's producers
// apply. test/unit/kafka/platformatic-client.test.ts checks each copy against the expected
// answers of a few cases; here the two are compared with each other: on a table of metadata
// answers that walks every rule of unusableTopics, on generated answers, and on clients
// whose metadata lookup the guard finds or not, and whose guarded lookup answers each way.
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

const kMetadata = Symbol('plt.kafka.base.metadata');

type Callback = (error: Error | null, metadata?: unknown) => void;

/** A client like @platformatic/kafka's: the metadata lookup under the symbol, answering `reply`, counting clearMetadata. */
function fakeClient(reply: (topics: string[]) => { error: Error | null; metadata?: Metadata }) {
  return {
    cleared: 0,
    clearMetadata() {
      this.cleared += 1;
    },
    [kMetadata](options: { topics: string[] }, callback: Callback) {
      const { error, metadata } = reply(options.topics);
      callback(error, metadata);
    },
  };
}

/** What a guarded lookup of `topics` came to, as plain data to compare. */
async function guardedLookup(guard: typeof daemon.guardSendMetadata, reply: Parameters<typeof fakeClient>[0], topics: string[]) {
  const target = fakeClient(reply);
  const guarded = guard(target);
  const outcome = await new Promise<unknown>((resolve) => {
    target[kMetadata]({ topics }, (error, metadata) => {
      resolve(error === null ? { metadata } : { error: { message: error.message, retriable: (error as { retriable?: unknown }).retriable, canRetry: (error as { canRetry?: unknown }).canRetry } });
    });
  });
  return { guarded, cleared: target.cleared, outcome };
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

  it.each([
    ['the lookup on the client itself', () => fakeClient(() => ({ error: null }))],
    ['the lookup on a prototype', () => Object.create(fakeClient(() => ({ error: null }))) as object],
    ['the lookup two prototypes up', () => Object.create(Object.create(fakeClient(() => ({ error: null })))) as object],
    ['no lookup', () => ({ clearMetadata() {} })],
    ['a symbol of that name that is not a function', () => ({ [Symbol('plt.kafka.base.metadata')]: 'not a function' })],
    ['a lookup under another symbol', () => ({ [Symbol('plt.kafka.base.other')]: () => undefined })],
  ])('finds the lookup, or not, the same: %s', (_what, make) => {
    expect(client.guardSendMetadata(make())).toBe(daemon.guardSendMetadata(make()));
  });

  it.each([
    ['an answer with every topic', ['a', 'b'], () => ({ error: null, metadata: answer({ a: leaders(1), b: leaders(2) }) })],
    ['an answer lacking a topic', ['a', 'b'], () => ({ error: null, metadata: answer({ a: leaders(1) }) })],
    ['an answer with a partition without a leader', ['a'], () => ({ error: null, metadata: answer({ a: leaders(1, -1) }) })],
    ['an error of the lookup, passed on as it is', ['a'], () => ({ error: Object.assign(new Error('broker gone'), { retriable: false }) })],
    ['no error and no answer', ['a'], () => ({ error: null })],
  ])('answers a guarded lookup the same: %s', async (_what, topics, reply) => {
    const [fromClient, fromDaemon] = await Promise.all([guardedLookup(client.guardSendMetadata, reply, topics), guardedLookup(daemon.guardSendMetadata, reply, topics)]);
    expect(fromDaemon.guarded).toBe(true);
    expect(fromClient).toEqual(fromDaemon);
  });
});
