/**
 * Merges the Kafka writes of concurrent requests into fewer produce requests.
 *
 * kafkajs sends every `sendBatch` as its own produce request, and the role's producer
 * keeps one in flight per broker (src/kafka/client.ts); under load, requests queue
 * inside kafkajs one produce each. Here, up to `maxConcurrentSends` writes go out at once;
 * writes that arrive meanwhile wait and leave together, as one merged `sendBatch`, when
 * a send finishes. At low load every write leaves at once, alone: no added delay.
 *
 * NOTE: each write still resolves only after the send that carried it was acknowledged
 * (acks=all), so "200 after the ack" holds. A merged send that fails fails every
 * write in it; some of its records may have been stored, and the clients' retries then
 * make duplicates (allowed). A write that times out while still waiting here is taken
 * out and never sent, so that 503 means "not written".
 */
import { SendTimeoutError } from '../errors.js';
import type { Message, TopicMessages } from '../kafka/index.js';

export type SendOutcome = { ok: true } | { ok: false; error: unknown };

export interface SendCoalescerOptions {
  /** One produce of the merged messages; resolves when Kafka acknowledged all of them. */
  sendBatch(topicMessages: TopicMessages[]): Promise<void>;
  /** Sends in flight at once; further writes wait and are merged. */
  maxConcurrentSends: number;
  /**
   * Writes are merged while their values total at most this many bytes.
   * NOTE: Kafka refuses a record batch (per partition) over the topic's
   * max.message.bytes, 1 MiB by default; staying under it in total keeps every
   * partition's share under it too. A larger single write goes alone.
   */
  maxBytesPerSend: number;
}

export interface SendCoalescer {
  /**
   * Writes `topicMessages` (`bytes`: the size of their values). Resolves with the
   * outcome, or a failure after `timeoutMs` if Kafka has not acknowledged by then.
   */
  send(topicMessages: TopicMessages[], bytes: number, timeoutMs: number): Promise<SendOutcome>;
  /** Writes waiting or in flight. */
  pending(): number;
}

export { SendTimeoutError };

interface Write {
  topicMessages: TopicMessages[];
  bytes: number;
  state: 'waiting' | 'sending' | 'done';
  timer: NodeJS.Timeout | undefined;
  settle(outcome: SendOutcome): void;
}

interface Group {
  writes: Write[];
  bytes: number;
}

export function createSendCoalescer(options: SendCoalescerOptions): SendCoalescer {
  const waiting: Group[] = [];
  let inFlight = 0;
  let pendingWrites = 0;

  const finish = (write: Write, outcome: SendOutcome): void => {
    if (write.state === 'done') return;
    write.state = 'done';
    clearTimeout(write.timer);
    pendingWrites -= 1;
    write.settle(outcome);
  };

  const dispatch = (writes: Write[]): void => {
    inFlight += 1;
    for (const write of writes) write.state = 'sending';
    const done = (outcome: SendOutcome): void => {
      inFlight -= 1;
      for (const write of writes) finish(write, outcome);
      pump();
    };
    let sending: Promise<void>;
    try {
      sending = options.sendBatch(writes.length === 1 ? writes[0]!.topicMessages : merge(writes));
    } catch (error) {
      sending = Promise.reject(error);
    }
    sending.then(
      () => done({ ok: true }),
      (error: unknown) => done({ ok: false, error }),
    );
  };

  const pump = (): void => {
    while (inFlight < options.maxConcurrentSends && waiting.length > 0) {
      const group = waiting.shift()!;
      const live = group.writes.filter((write) => write.state === 'waiting');
      if (live.length > 0) dispatch(live);
    }
  };

  return {
    send(topicMessages, bytes, timeoutMs) {
      return new Promise<SendOutcome>((resolve) => {
        const write: Write = { topicMessages, bytes, state: 'waiting', timer: undefined, settle: resolve };
        pendingWrites += 1;
        write.timer = setTimeout(() => {
          finish(write, { ok: false, error: new SendTimeoutError(timeoutMs, write.state === 'sending') });
        }, timeoutMs);
        const last = waiting.at(-1);
        if (last !== undefined && last.bytes + bytes <= options.maxBytesPerSend) {
          last.writes.push(write);
          last.bytes += bytes;
        } else {
          waiting.push({ writes: [write], bytes });
        }
        pump();
      });
    },
    pending: () => pendingWrites,
  };
}

/** The writes' messages as one list per topic, in the order the writes came. */
function merge(writes: readonly Write[]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>();
  for (const write of writes) {
    for (const { topic, messages } of write.topicMessages) {
      const list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, [...messages]);
      else for (const message of messages) list.push(message);
    }
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
