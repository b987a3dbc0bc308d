// The check of the metadata a send reads (src/kafka/platformatic-send-guard.ts, and the
// client package's copy, packages/client/src/send-guard.ts) on the pinned
// @platformatic/kafka producer against the real broker: the check reads the producer's
// public metadata() and the send then reads the same cached entries, asking the broker
// nothing of its own; an answer without a topic fails the send, retriably, and drops the
// producer's cached metadata. And the daemon's producers (createProducer, a transaction's
// send) make the check before each send: with the library's producer inside them answering
// metadata() without the topic, their send fails and writes nothing.
// docs/kafka.md#the-producers-metadata-check.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '@platformatic/kafka';
import { createKafka, createProducer, createTransactionalProducer } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import * as daemonGuard from '../../src/kafka/platformatic-send-guard.js';
import * as clientGuard from '../../packages/client/src/send-guard.js';
import { createTestAdmin, randomName, testBrokers, testClientOptions } from '../support/kafka.js';

const topicA = randomName('check-a');
const topicB = randomName('check-b');

beforeAll(async () => {
  const admin = createTestAdmin();
  await admin.createTopics({ topics: [{ topic: topicA, numPartitions: 3 }, { topic: topicB, numPartitions: 1 }] });
  await admin.close();
});

const messages = (n: number) => Array.from({ length: n }, (_, i) => ({ topic: i % 2 === 0 ? topicA : topicB, key: Buffer.from(`k-${i}`), value: Buffer.from(`v-${i}`) }));

describe.each([
  ['the daemon', daemonGuard],
  ['the client package', clientGuard],
])('the check of the metadata a send reads, on a real producer (%s)', (_who, guard) => {
  const producers: Producer[] = [];
  const producer = (metadataMaxAge: number): { producer: Producer; fetches: () => number } => {
    const made = new Producer({ ...testClientOptions(randomName('check')), acks: -1, metadataMaxAge });
    producers.push(made);
    // The client emits client:metadata on each answer it got from the broker (not on one from its cache).
    let fetched = 0;
    made.on('client:metadata', () => (fetched += 1));
    return { producer: made, fetches: () => fetched };
  };

  afterAll(async () => {
    await Promise.all(producers.map((p) => p.close()));
  });

  it('lets the send read the entries it checked: the library asks the broker nothing during the send', async () => {
    const { producer: checked, fetches } = producer(guard.LIBRARY_METADATA_MAX_AGE_MS);
    await guard.checkSendMetadata(checked, [topicA, topicB]);
    expect(fetches()).toBe(1);
    const checkedEntries = checked.currentMetadata!.topics;
    expect(guard.unusableTopics([topicA, topicB], { topics: checkedEntries })).toEqual([]);
    const lastUpdate = checkedEntries.get(topicA)!.lastUpdate;
    // Past the library's default age: with LIBRARY_METADATA_MAX_AGE_MS the library still reads its cache.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const result = await checked.send({ messages: messages(10) });
    expect(result.offsets?.length).toBeGreaterThan(0);
    expect(fetches()).toBe(1);
    expect(checked.currentMetadata!.topics.get(topicA)!.lastUpdate).toBe(lastUpdate);
    // A check within METADATA_REFRESH_MS is answered from the cache too.
    await guard.checkSendMetadata(checked, [topicA, topicB]);
    expect(fetches()).toBe(1);
  });

  it('(why the producers are made with LIBRARY_METADATA_MAX_AGE_MS) with a short metadataMaxAge the send asks the broker again, and reads that answer unchecked', async () => {
    const { producer: short, fetches } = producer(200);
    await guard.checkSendMetadata(short, [topicA, topicB]);
    expect(fetches()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await short.send({ messages: messages(10) });
    expect(fetches()).toBeGreaterThan(1);
  });

  it('fails the send, retriably, when the answer lacks a topic, and drops the cached metadata so that the next check asks the broker', async () => {
    const { producer: real, fetches } = producer(guard.LIBRARY_METADATA_MAX_AGE_MS);
    // The producer's public metadata(), whose answer lacks topicB (as one did during a broker restart).
    const lacking: daemonGuard.MetadataClient = {
      async metadata(options) {
        const answer = await real.metadata(options);
        return { ...answer, topics: new Map([...answer.topics].filter(([topic]) => topic !== topicB)) };
      },
      clearMetadata: () => real.clearMetadata(),
    };
    await expect(guard.checkSendMetadata(lacking, [topicA, topicB])).rejects.toMatchObject({
      message: expect.stringContaining(`no partition leaders for ${topicB} `),
      retriable: true,
      canRetry: true,
    });
    expect(real.currentMetadata).toBeUndefined();
    expect(fetches()).toBe(1);
    await guard.checkSendMetadata(real, [topicA, topicB]);
    expect(fetches()).toBe(2);
    await real.send({ messages: messages(4) });
    expect(fetches()).toBe(2);
  });

  it('passes on the broker\'s answer for a topic that does not exist, as the send would have failed', async () => {
    const { producer: real } = producer(guard.LIBRARY_METADATA_MAX_AGE_MS);
    await expect(guard.checkSendMetadata(real, [randomName('missing')])).rejects.toMatchObject({ message: expect.stringMatching(/^Unknown topic /) });
  });
});

/**
 * The library producers made while `make` runs, found through the library's public
 * diagnostics channel of client creation (`plt:kafka:instances`).
 */
async function producersMadeBy<T>(make: () => Promise<T> | T): Promise<{ made: T; producers: Producer[] }> {
  const producers: Producer[] = [];
  const onInstance = (message: unknown) => {
    const { type, instance } = message as { type: string; instance: unknown };
    if (type === 'producer') producers.push(instance as Producer);
  };
  subscribe('plt:kafka:instances', onInstance);
  try {
    return { made: await make(), producers };
  } finally {
    unsubscribe('plt:kafka:instances', onInstance);
  }
}

/** Makes `producer`'s public metadata() answer without `topic` (as one did during a broker restart); returns the undo. */
function answerWithout(producer: Producer, topic: string): () => void {
  const own = producer as unknown as { metadata: daemonGuard.MetadataClient['metadata'] };
  const original = producer.metadata.bind(producer) as daemonGuard.MetadataClient['metadata'];
  own.metadata = async (options) => {
    const answer = await original(options);
    return { ...answer, topics: new Map([...answer.topics].filter(([name]) => name !== topic)) };
  };
  return () => delete (own as { metadata?: unknown }).metadata;
}

describe("the daemon's producers check the metadata before each send", () => {
  const kafka = () => createKafka({ brokers: testBrokers(), clientId: randomName('check'), topicPrefix: 'x.', partitions: 1, replicationFactor: 1 }, silentLogger());
  const record = (n: number) => ({ key: `k-${n}`, value: `v-${n}` });
  const admin = createTestAdmin();
  const stored = async (topic: string) => (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);

  afterAll(async () => {
    await admin.close();
  });

  it('createProducer: a send whose metadata lacks its topic fails, retriably, and writes nothing', async () => {
    const topic = randomName('check-send');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const { made: producer, producers } = await producersMadeBy(() => createProducer(kafka()));
    expect(producers).toHaveLength(1);
    try {
      await producer.connect();
      await producer.send([{ topic, messages: [record(1)] }]);
      const undo = answerWithout(producers[0]!, topic);
      await expect(producer.send([{ topic, messages: [record(2), record(3)] }])).rejects.toMatchObject({ message: expect.stringContaining(`no partition leaders for ${topic} `), retriable: true });
      expect(producers[0]!.currentMetadata).toBeUndefined();
      undo();
      await producer.send([{ topic, messages: [record(4)] }]);
      expect(await stored(topic)).toBe(2);
    } finally {
      await producer.disconnect();
    }
  });

  it("a transaction's send whose metadata lacks its topic fails, retriably, and its transaction commits nothing of it", async () => {
    const topic = randomName('check-txn');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const { made: producer, producers } = await producersMadeBy(() => createTransactionalProducer(kafka(), { transactionalId: randomName('check-txn') }));
    expect(producers).toHaveLength(1);
    try {
      await producer.connect();
      const transaction = await producer.begin();
      const undo = answerWithout(producers[0]!, topic);
      await expect(transaction.send([{ topic, messages: [record(1)] }])).rejects.toMatchObject({ message: expect.stringContaining(`no partition leaders for ${topic} `), retriable: true });
      undo();
      await transaction.send([{ topic, messages: [record(2)] }]);
      await transaction.commit();
      // The committed record and its commit marker; the refused send wrote nothing.
      await admin.waitForSettled(topic);
      expect(await stored(topic)).toBe(2);
    } finally {
      await producer.close();
    }
  });
});
