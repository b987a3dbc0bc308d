import { describe, expect, it } from 'vitest';
import { SendTimeoutError, createSendQueue } from '../../../src/kafka/producer.js';
import type { ProducerOptions } from '../../../src/kafka/producer.js';
import type { TopicRecords } from '../../../src/kafka/records.js';

type TopicMessages = TopicRecords;
type SendOutcome = { ok: true } | { ok: false; error: unknown };

/** The queue under test, its sends answered as outcomes. */
function sendQueueFixture(options: { sendBatch: (tm: TopicMessages[]) => Promise<void>; maxConcurrentSends: number; maxBytesPerSend: number }) {
  const settings: ProducerOptions = { maxConcurrentSends: options.maxConcurrentSends, maxTopicBytesPerSend: options.maxBytesPerSend };
  const queue = createSendQueue(options.sendBatch, settings);
  return {
    send: (records: TopicMessages[], bytes: number, timeoutMs: number): Promise<SendOutcome> =>
      queue.send(sized(records, bytes), { timeoutMs }).then(
        (): SendOutcome => ({ ok: true }),
        (error: unknown): SendOutcome => ({ ok: false, error }),
      ),
    pending: () => queue.pending(),
  };
}

/** The write's size, given to its first topic (as a SendBuffer counts it). */
function sized(records: TopicMessages[], bytes: number): TopicMessages[] {
  return records.map((r, i) => ({ ...r, bytes: i === 0 ? bytes : 0 }));
}

/** A sendBatch whose calls the test resolves or rejects by hand. */
function fakeKafka() {
  const calls: { topicMessages: TopicMessages[]; ack(): void; fail(error: Error): void }[] = [];
  return {
    calls,
    sendBatch(topicMessages: TopicMessages[]): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        calls.push({ topicMessages, ack: resolve, fail: reject });
      });
    },
  };
}

function write(topic: string, ...values: string[]): TopicMessages[] {
  return [{ topic, messages: values.map((value) => ({ key: value, value })) }];
}

function valuesOf(topicMessages: TopicMessages[]): Record<string, unknown[]> {
  return Object.fromEntries(topicMessages.map(({ topic, messages }) => [topic, messages.map((m) => m.value)]));
}

/** Lets settled promises run their callbacks. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the producer batching policy (createSendQueue)', () => {
  it('sends at the end of the turn, alone, while below the concurrency bound', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 2, maxBytesPerSend: 1000 });
    const first = sender.send(write('calls', 'a'), 1, 10_000);
    expect(kafka.calls).toHaveLength(0);
    await turn();
    const second = sender.send(write('calls', 'b'), 1, 10_000);
    await turn();
    expect(kafka.calls.map((c) => valuesOf(c.topicMessages))).toEqual([{ calls: ['a'] }, { calls: ['b'] }]);
    kafka.calls[0]!.ack();
    kafka.calls[1]!.ack();
    expect(await first).toEqual({ ok: true });
    expect(await second).toEqual({ ok: true });
    expect(sender.pending()).toBe(0);
  });

  it('merges the writes that wait into one send per topic, in arrival order, and answers each after its ack', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 1, maxBytesPerSend: 1000 });
    const outcomes: SendOutcome[] = [];
    void sender.send(write('calls', 'a'), 1, 10_000).then((o) => outcomes.push(o));
    await turn();
    void sender.send(write('calls', 'b'), 1, 10_000).then((o) => outcomes.push(o));
    void sender.send([...write('calls', 'c'), ...write('calls.invalid', 'x')], 2, 10_000).then((o) => outcomes.push(o));
    await turn();
    expect(kafka.calls).toHaveLength(1);
    expect(sender.pending()).toBe(3);

    kafka.calls[0]!.ack();
    await turn();
    // The first is answered; the two that waited leave together.
    expect(outcomes).toEqual([{ ok: true }]);
    expect(kafka.calls).toHaveLength(2);
    expect(valuesOf(kafka.calls[1]!.topicMessages)).toEqual({ calls: ['b', 'c'], 'calls.invalid': ['x'] });

    kafka.calls[1]!.ack();
    await turn();
    expect(outcomes).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
  });

  it('sends the writes made in one turn together, with nothing in flight', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 1, maxBytesPerSend: 1000 });
    const first = sender.send(write('deliveries.a', 'a1'), 1, 10_000);
    const second = sender.send([...write('deliveries.a', 'a2'), ...write('deliveries.b', 'b1')], 2, 10_000);
    await turn();
    expect(kafka.calls.map((c) => valuesOf(c.topicMessages))).toEqual([{ 'deliveries.a': ['a1', 'a2'], 'deliveries.b': ['b1'] }]);
    kafka.calls[0]!.ack();
    expect([await first, await second]).toEqual([{ ok: true }, { ok: true }]);
  });

  it('sends a write marked alone as a request of its own, merged with nothing before or after it', async () => {
    const kafka = fakeKafka();
    const queue = createSendQueue((tm) => kafka.sendBatch(tm), { maxConcurrentSends: 3, maxTopicBytesPerSend: 1000 });
    const outcomes = [queue.send(write('lake', 'a')), queue.send(write('lake', 'b'), { alone: true }), queue.send(write('lake', 'c')), queue.send(write('lake', 'd'))];
    await turn();
    expect(kafka.calls.map((c) => valuesOf(c.topicMessages))).toEqual([{ lake: ['a'] }, { lake: ['b'] }, { lake: ['c', 'd'] }]);
    for (const call of kafka.calls) call.ack();
    await Promise.all(outcomes);
  });

  it('keeps a merged send under the byte cap per topic, a larger write going alone', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 1, maxBytesPerSend: 100 });
    void sender.send(write('t', 'busy'), 1, 10_000);
    await turn();
    void sender.send(write('t', 'a'), 60, 10_000);
    void sender.send(write('t', 'b'), 30, 10_000);
    void sender.send(write('t', 'c'), 30, 10_000);
    void sender.send(write('t', 'huge'), 500, 10_000);
    for (let i = 0; i < 4; i++) {
      kafka.calls[i]!.ack();
      await turn();
    }
    expect(kafka.calls.map((c) => valuesOf(c.topicMessages).t)).toEqual([['busy'], ['a', 'b'], ['c'], ['huge']]);
  });

  it('splits a write over the cap into requests within it, one after the other, in order', async () => {
    const kafka = fakeKafka();
    // Each record of write() is 24 + key + value = 26 bytes by recordBytes.
    const sender = createSendQueue((tm) => kafka.sendBatch(tm), { maxConcurrentSends: 1, maxTopicBytesPerSend: 60 });
    const done = sender.send([...write('t', 'a', 'b', 'c', 'd', 'e'), ...write('u', 'x')]);
    await turn();
    expect(kafka.calls.map((c) => valuesOf(c.topicMessages))).toEqual([{ t: ['a', 'b'] }]);
    kafka.calls[0]!.ack();
    await turn();
    expect(valuesOf(kafka.calls[1]!.topicMessages)).toEqual({ t: ['c', 'd'] });
    kafka.calls[1]!.ack();
    await turn();
    expect(valuesOf(kafka.calls[2]!.topicMessages)).toEqual({ t: ['e'], u: ['x'] });
    kafka.calls[2]!.ack();
    await done;
    expect(sender.pending()).toBe(0);
  });

  it('fails every write of a failed send with its error, and goes on with the next', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 1, maxBytesPerSend: 1000 });
    const first = sender.send(write('t', 'a'), 1, 10_000);
    await turn();
    const second = sender.send(write('t', 'b'), 1, 10_000);
    const third = sender.send(write('t', 'c'), 1, 10_000);
    const broken = new Error('broker gone');
    kafka.calls[0]!.fail(broken);
    expect(await first).toEqual({ ok: false, error: broken });
    await turn();
    kafka.calls[1]!.fail(broken);
    expect(await second).toEqual({ ok: false, error: broken });
    expect(await third).toEqual({ ok: false, error: broken });
    const later = sender.send(write('t', 'd'), 1, 10_000);
    await turn();
    kafka.calls[2]!.ack();
    expect(await later).toEqual({ ok: true });
  });

  it('turns a sendBatch that throws into a failed outcome', async () => {
    const sender = sendQueueFixture({
      sendBatch: () => {
        throw new Error('not connected');
      },
      maxConcurrentSends: 1,
      maxBytesPerSend: 1000,
    });
    const outcome = await sender.send(write('t', 'a'), 1, 10_000);
    expect(outcome.ok).toBe(false);
    expect(!outcome.ok && (outcome.error as Error).message).toBe('not connected');
  });

  it('times out a write in flight, and takes a waiting one out so that it is never sent', async () => {
    const kafka = fakeKafka();
    const sender = sendQueueFixture({ sendBatch: (tm) => kafka.sendBatch(tm), maxConcurrentSends: 1, maxBytesPerSend: 1000 });
    const inFlight = sender.send(write('t', 'a'), 1, 50);
    await turn();
    const waiting = sender.send(write('t', 'b'), 1, 50);
    const [sent, held] = await Promise.all([inFlight, waiting]);
    expect(!sent.ok && sent.error).toBeInstanceOf(SendTimeoutError);
    expect(!sent.ok && (sent.error as SendTimeoutError).sent).toBe(true);
    expect(!held.ok && (held.error as SendTimeoutError).sent).toBe(false);
    expect(sender.pending()).toBe(0);
    // The late ack of the first send releases the slot; the timed-out waiter is not sent.
    kafka.calls[0]!.ack();
    await turn();
    expect(kafka.calls).toHaveLength(1);
  });
});
