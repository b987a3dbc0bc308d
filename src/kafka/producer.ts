// The port's producer: every role writes through it, acks=all, with ONE batching policy
// and ONE size cap (send-buffer.ts). Up to `maxConcurrentSends` sends are in flight; those
// that arrive meanwhile, or in the same turn of the event loop, leave together, merged
// per topic; a send over the cap goes as several requests in order.
// NOTE: a send resolves once the request that carried it was acknowledged; a merged
// request that fails fails every send in it (retries may duplicate: allowed). A send
// that times out while still waiting here is never sent.
import { compatibilityPartitioner, Producer as PlatformaticProducer } from '@platformatic/kafka';
import { SendTimeoutError } from '../errors.js';
import type { KafkaClient } from './client.js';
import { platformaticOptions, toPlatformaticMessages } from './platformatic-client.js';
import { LIBRARY_METADATA_MAX_AGE_MS, checkSendMetadata, topicsOf } from './platformatic-send-guard.js';
import { recordBytes } from './records.js';
import type { OutboundRecord, TopicRecords } from './records.js';
import { MAX_TOPIC_BYTES_PER_SEND, SendBuffer } from './send-buffer.js';

export interface ProducerOptions {
  /** Sends in flight at once (default 1: the client sends one request at a time per broker anyway); the others wait and are merged (docs/benchmarks.md#figures-behind-the-code). */
  maxConcurrentSends?: number;
  /** The cap on one request's bytes per topic (tests and the benchmark lower it). Default MAX_TOPIC_BYTES_PER_SEND. */
  maxTopicBytesPerSend?: number;
  /** How long the broker may take to acknowledge one request (the produce request's timeout). Default 30 s. */
  ackTimeoutMs?: number;
  /** An idempotent producer: only for a Kafka destination's topic (src/delivery/kafka-sender.ts); every other writer keeps false (see below). */
  idempotent?: boolean;
}

export interface SendOptions {
  /** Fail with SendTimeoutError when not acknowledged within this long (a send still waiting is then never sent). */
  timeoutMs?: number;
  /** A request of its own, merged with no other: the broker's refusal (a record too large) is then these records' alone. */
  alone?: boolean;
}

/** What every role writes with. */
export interface RecordProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /** Connected to the cluster: from connect() to disconnect(), through broker outages (a failing send says what is wrong). */
  connected(): boolean;
  /** Writes the records with acks=all; resolves once every one of them is acknowledged. */
  send(records: readonly TopicRecords[], options?: SendOptions): Promise<void>;
  /** Sends waiting or in flight. */
  pending(): number;
}

export { SendTimeoutError };

/** One request to the cluster; resolves when it is acknowledged. */
export type SendRequest = (records: TopicRecords[]) => Promise<void>;

/**
 * The port's producer on @platformatic/kafka: acks=all, keys hashed as kafkajs and the
 * Java client do (murmur2, sign bit masked), so a user's calls land on the same
 * partition whichever client wrote them. NOT idempotent.
 *
 * NOTE: an idempotent producer can acknowledge records it never wrote (kafkajs's reused
 * sequence numbers after a broker restart: test/integration/producer-broker-restart.test.ts);
 * without idempotence a retry can only write a record twice, which the contract allows.
 *
 * NOTE: this client connects on first use; `connect()` asks for the cluster's metadata
 * so that a broker that cannot be reached fails the start.
 */
export function createProducer(client: KafkaClient, options: ProducerOptions = {}): RecordProducer {
  const producer = new PlatformaticProducer({
    ...platformaticOptions(client.settings, client.clientId, options.ackTimeoutMs),
    acks: -1,
    idempotent: options.idempotent === true,
    partitioner: compatibilityPartitioner,
    metadataMaxAge: LIBRARY_METADATA_MAX_AGE_MS,
  });
  // NOTE: connected from connect() to disconnect(), through broker outages: a failing
  // send says what is wrong (the gateway's health detail), and every replica shares the
  // brokers, so an outage must not make them all unready (gateway-service.ts).
  let isConnected = false;
  const queue = createSendQueue(async (topicMessages) => {
    // A metadata answer without a topic's leaders (a broker restarting) fails the send,
    // to be retried, instead of throwing inside the client (platformatic-send-guard.ts).
    await checkSendMetadata(producer, topicsOf(topicMessages));
    await producer.send({ messages: toPlatformaticMessages(topicMessages) });
  }, options);
  return {
    async connect() {
      await producer.metadata({ topics: [] });
      isConnected = true;
    },
    async disconnect() {
      await producer.close();
      isConnected = false;
    },
    connected: () => isConnected,
    send: (records, sendOptions) => queue.send(records, sendOptions),
    pending: () => queue.pending(),
  };
}

interface Write {
  records: readonly TopicRecords[];
  bytes: Map<string, number>;
  state: 'waiting' | 'sending' | 'done';
  timer: NodeJS.Timeout | undefined;
  resolve(): void;
  reject(error: unknown): void;
}

interface Group {
  writes: Write[];
  bytes: Map<string, number>;
  /** A send that goes alone (SendOptions.alone): nothing joins it. */
  alone?: boolean;
}

/** The batching policy on its own (what `createProducer` wraps around the client; tested without a broker). */
export function createSendQueue(request: SendRequest, options: Omit<ProducerOptions, 'ackTimeoutMs'> = {}): Pick<RecordProducer, 'send' | 'pending'> {
  const maxConcurrentSends = options.maxConcurrentSends ?? 1;
  const cap = options.maxTopicBytesPerSend ?? MAX_TOPIC_BYTES_PER_SEND;
  const waiting: Group[] = [];
  let inFlight = 0;
  let pendingWrites = 0;
  let pumpScheduled = false;

  const finish = (write: Write, error?: unknown): void => {
    if (write.state === 'done') return;
    write.state = 'done';
    clearTimeout(write.timer);
    pendingWrites -= 1;
    if (error === undefined) write.resolve();
    else write.reject(error);
  };

  const dispatch = (group: Group, writes: Write[]): void => {
    inFlight += 1;
    for (const write of writes) write.state = 'sending';
    const done = (error?: unknown): void => {
      inFlight -= 1;
      for (const write of writes) finish(write, error);
      pump();
    };
    sendInRequests(request, writes.length === 1 ? writes[0]!.records : merge(writes), group.bytes, cap).then(
      () => done(),
      (error: unknown) => done(error ?? new Error('send failed')),
    );
  };

  const pump = (): void => {
    while (inFlight < maxConcurrentSends && waiting.length > 0) {
      const group = waiting.shift()!;
      const live = group.writes.filter((write) => write.state === 'waiting');
      if (live.length > 0) dispatch(group, live);
    }
  };

  return {
    send(records, sendOptions = {}) {
      return new Promise<void>((resolve, reject) => {
        const write: Write = { records, bytes: topicBytes(records), state: 'waiting', timer: undefined, resolve, reject };
        pendingWrites += 1;
        const { timeoutMs } = sendOptions;
        if (timeoutMs !== undefined) {
          write.timer = setTimeout(() => finish(write, new SendTimeoutError(timeoutMs, write.state === 'sending')), timeoutMs);
        }
        const last = sendOptions.alone === true ? undefined : waiting.at(-1);
        if (last !== undefined && last.alone !== true && fitsWithin(last.bytes, write.bytes, cap)) {
          last.writes.push(write);
          for (const [topic, bytes] of write.bytes) last.bytes.set(topic, (last.bytes.get(topic) ?? 0) + bytes);
        } else {
          waiting.push(sendOptions.alone === true ? { writes: [write], bytes: new Map(write.bytes), alone: true } : { writes: [write], bytes: new Map(write.bytes) });
        }
        // NOTE: at the end of this turn of the event loop, not at once: the sends made in
        // one turn (the router's batches of one fetch, routed one after the other) leave
        // as one request even when nothing is in flight.
        if (!pumpScheduled) {
          pumpScheduled = true;
          setImmediate(() => {
            pumpScheduled = false;
            pump();
          });
        }
      });
    },
    pending: () => pendingWrites,
  };
}

/** Bytes per topic of a send: the buffer's own count when it comes from a SendBuffer, else measured. */
function topicBytes(records: readonly TopicRecords[]): Map<string, number> {
  const bytes = new Map<string, number>();
  for (const { topic, messages, bytes: known } of records) {
    bytes.set(topic, (bytes.get(topic) ?? 0) + (known ?? measure(messages)));
  }
  return bytes;
}

function measure(messages: readonly OutboundRecord[]): number {
  let total = 0;
  for (const m of messages) total += recordBytes(m.key, m.value, m.headers);
  return total;
}

/** Whether `more` can join `group` with no topic over the cap (nothing joins a group that is already over it). */
function fitsWithin(group: ReadonlyMap<string, number>, more: ReadonlyMap<string, number>, cap: number): boolean {
  for (const [topic, bytes] of more) if ((group.get(topic) ?? 0) + bytes > cap) return false;
  return true;
}

/** One request when every topic is within the cap; else one after the other, each within it. */
async function sendInRequests(request: SendRequest, records: readonly TopicRecords[], bytes: ReadonlyMap<string, number>, cap: number): Promise<void> {
  if ([...bytes.values()].every((b) => b <= cap)) {
    await request(records.map(({ topic, messages }) => ({ topic, messages })));
    return;
  }
  const buffer = new SendBuffer(cap);
  for (const { topic, messages } of records) {
    for (const message of messages) {
      const size = recordBytes(message.key, message.value, message.headers);
      if (!buffer.fits(topic, size)) {
        await request(buffer.topicRecords());
        buffer.clear();
      }
      buffer.add(topic, message, size);
    }
  }
  if (buffer.size > 0) await request(buffer.topicRecords());
}

/** The writes' records as one list per topic, in the order the writes came. */
function merge(writes: readonly Write[]): TopicRecords[] {
  const byTopic = new Map<string, OutboundRecord[]>();
  for (const write of writes) {
    for (const { topic, messages } of write.records) {
      const list = byTopic.get(topic);
      if (list === undefined) byTopic.set(topic, [...messages]);
      else for (const message of messages) list.push(message);
    }
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
