// The admin's log ends of many topics at once (the lag sampler's and the deliverer's
// view at hundreds of destinations), on a real broker: 120 topics asked of their leader
// in one request per end, every one answered with its own ends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin, createKafka } from '../../src/kafka/index.js';
import type { KafkaAdmin } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let admin: KafkaAdmin;
const prefix = randomPrefix();
const topics = Array.from({ length: 120 }, (_, i) => `${prefix}ends.${i}`);

beforeAll(async () => {
  kafka = await createTestKafka();
  const config = testConfig({
    kafka: { brokers: testBrokers(), clientId: randomName('ends'), topicPrefix: prefix, partitions: 1 },
    sources: [{ id: 'web' }],
    destinations: [],
  });
  admin = createAdmin(createKafka(config.kafka, silentLogger()));
  await admin.connect();
  await admin.ensureTopics(
    topics.map((topic) => ({ topic })),
    { partitions: 2, replicationFactor: 1 },
  );
}, 120_000);

afterAll(async () => {
  await kafka?.admin.deleteTopics({ topics }).catch(() => undefined);
  await admin?.disconnect();
  await kafka?.close();
});

describe('log ends of many topics', () => {
  it('gives every partition of every topic its own high watermark, with all of them asked at once', async () => {
    // Topic i gets i % 7 records on partition 0 and one on partition 1 when i % 3 = 0.
    for (let i = 0; i < topics.length; i += 1) {
      const messages = Array.from({ length: i % 7 }, (_, n) => ({ value: `r${n}`, partition: 0 }));
      if (i % 3 === 0) messages.push({ value: 'p1', partition: 1 });
      if (messages.length > 0) await kafka.producer.send({ topic: topics[i]!, messages });
    }
    // Topic 6's log starts at 4 on partition 0 (6 records, the first 4 deleted).
    await kafka.admin.deleteTopicRecords({ topic: topics[6]!, partitions: [{ partition: 0, offset: '4' }] });
    const ends = await admin.partitionEndsOf!(topics);
    expect(ends.size).toBe(topics.length);
    topics.forEach((topic, i) => {
      const partitions = [...(ends.get(topic) ?? [])].sort((a, b) => a.partition - b.partition);
      expect(partitions, topic).toEqual([
        { partition: 0, high: String(i % 7), low: i === 6 ? '4' : '0' },
        { partition: 1, high: i % 3 === 0 ? '1' : '0', low: '0' },
      ]);
    });
  }, 120_000);
});
