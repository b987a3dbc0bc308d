// The check of the metadata a send reads (src/kafka/platformatic-send-guard.ts, and the
// client package's copy, packages/client/src/send-guard.ts) on the pinned
// @platformatic/kafka producer against the real broker: the check reads the producer's
// public metadata() and the send then reads the same cached entries, asking the broker
// nothing of its own; an answer without a topic fails the send, retriably, and drops the
// producer's cached metadata. docs/kafka.md#the-producers-metadata-check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '@platformatic/kafka';
import * as daemonGuard from '../../src/kafka/platformatic-send-guard.js';
import * as clientGuard from '../../packages/client/src/send-guard.js';
import { createTestAdmin, randomName, testClientOptions } from '../support/kafka.js';

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
