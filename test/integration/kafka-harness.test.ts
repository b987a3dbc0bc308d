import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, randomName } from '../support/kafka.js';

describe('the test broker', () => {
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  beforeAll(async () => {
    kafka = await createTestKafka();
  });
  afterAll(async () => {
    await kafka.close();
  });

  it('round-trips bytes, keys and headers through a real broker', async () => {
    const topic = randomName('harness');
    await kafka.createTopic(topic, 3);
    const value = Buffer.from('{"ünïcode":"✓","n":1}', 'utf8');
    await kafka.produce(topic, [
      { key: 'user-1', value, headers: { 'source-id': 'web' } },
      { key: 'user-2', value: 'second' },
    ]);
    const messages = await kafka.readAll(topic, { atLeast: 2 });
    expect(messages).toHaveLength(2);
    const first = messages.find((m) => m.key === 'user-1');
    expect(first?.value?.equals(value)).toBe(true);
    expect(first?.headers).toEqual({ 'source-id': 'web' });
    expect(messages.find((m) => m.key === 'user-2')?.text).toBe('second');
  });
});
