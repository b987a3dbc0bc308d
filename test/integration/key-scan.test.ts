// The port's key reads (src/kafka/key-scan.ts) against the real broker: the key's partition
// as producers pick it, the offsets at a window's bounds by timestamp, and a read of just
// that partition between them, with no consumer group.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, createKeyReader, partitionOfKey } from '../../src/kafka/index.js';
import type { KeyReader } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, testBrokers } from '../support/kafka.js';

const HOUR = 3_600_000;
const PARTITIONS = 3;

let tk: Awaited<ReturnType<typeof createTestKafka>>;
let reader: KeyReader;

beforeAll(async () => {
  tk = await createTestKafka();
  const config = testConfig({
    kafka: { brokers: testBrokers(), clientId: randomName('key-scan') },
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
  });
  reader = createKeyReader(createKafka(config.kafka, silentLogger()));
});
afterAll(async () => {
  await reader?.close();
  await tk?.close();
});

describe('createKeyReader', () => {
  it("reads one key's records in a window of time, from its partition only, in two topics at once", async () => {
    const now = Date.now();
    const [calls, invalid] = [randomName('calls'), randomName('invalid')];
    await tk.createTopic(calls, PARTITIONS);
    await tk.createTopic(invalid, PARTITIONS);
    // Four users, a record each every 20 minutes over the last 4 hours (times as producers set them), keyed by user.
    const users = ['u-1', 'u-2', 'u-3', 'u-4'];
    const messages = Array.from({ length: 12 }, (_, i) => now - 4 * HOUR + i * 20 * 60_000).flatMap((at) =>
      users.map((user) => ({ key: user, value: `${user}@${at}`, timestamp: String(at), headers: { 'message-id': `${user}-${at}` } })),
    );
    await tk.producer.send({ topic: calls, messages });
    await tk.producer.send({ topic: invalid, messages: [{ key: 'u-1', value: 'bad', timestamp: String(now - HOUR) }] });

    const key = Buffer.from('u-1');
    const partition = partitionOfKey(key, PARTITIONS);
    const window = { sinceMs: now - 2 * HOUR, untilMs: now - HOUR + 1 };
    const reads = await reader.read(await reader.ranges([calls, invalid].map((topic) => ({ topic, partition, ...window }))), key);

    const found = reads.find((r) => r.range.topic === calls)!;
    const expected = messages.filter((m) => m.key === 'u-1' && Number(m.timestamp) >= window.sinceMs && Number(m.timestamp) < window.untilMs);
    expect(expected).toHaveLength(4);
    expect(found.records.map((r) => [r.key?.toString(), r.value?.toString(), r.timestamp, r.headers?.['message-id']?.toString()])).toEqual(
      expected.map((m) => [m.key, m.value, m.timestamp, m.headers['message-id']]),
    );
    expect(found.records.every((r) => r.partition === partition)).toBe(true);
    // Every record of the partition in the window was read, the other users' too; none outside it.
    const sharing = users.filter((u) => partitionOfKey(Buffer.from(u), PARTITIONS) === partition).length;
    expect(found.scanned).toBe(4 * sharing);
    expect(found.range).toMatchObject({ topic: calls, partition, logStart: 0n, end: found.range.start + BigInt(4 * sharing) });
    expect(found.firstTimestampMs).toBe(window.sinceMs);
    expect(reads.find((r) => r.range.topic === invalid)!.records.map((r) => r.value?.toString())).toEqual(['bad']);

    // An open window reads to the end; one after the last record reads nothing.
    const [open] = await reader.read(await reader.ranges([{ topic: calls, partition, sinceMs: now - HOUR }]), key);
    expect(open!.records).toHaveLength(3);
    const [later] = await reader.ranges([{ topic: calls, partition, sinceMs: now + HOUR }]);
    expect(later!.start).toBe(later!.end);
    expect((await reader.read([later!], key))[0]).toMatchObject({ records: [], scanned: 0 });
  });

  it('starts at the log start when retention deleted the beginning of the window, and says when the first kept record is from', async () => {
    const now = Date.now();
    const topic = randomName('retained');
    await tk.createTopic(topic, 1);
    const times = [now - 3 * HOUR, now - 2 * HOUR, now - HOUR];
    await tk.producer.send({ topic, messages: times.map((at) => ({ key: 'u-1', value: String(at), timestamp: String(at) })) });
    // As retention would: the oldest record gone.
    await tk.admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '1' }] });
    const [range] = await reader.ranges([{ topic, partition: 0, sinceMs: now - 4 * HOUR }]);
    expect(range).toEqual({ topic, partition: 0, logStart: 1n, start: 1n, end: 3n });
    const [read] = await reader.read([range!], Buffer.from('u-1'));
    expect(read!.records.map((r) => Number(r.value?.toString()))).toEqual(times.slice(1));
    expect(read!.firstTimestampMs).toBe(now - 2 * HOUR);
  });
});
