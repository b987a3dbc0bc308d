// The gateway's Kafka side: its two topics, one producer (acks=all, not idempotent:
// see src/kafka/client.ts) and the send coalescer that merges the writes of
// concurrent requests. Every write of a request goes out as ONE send.
import type { Config } from '../config/schema.js';
import { createProducer, ensureTopics } from '../kafka/index.js';
import type { Kafka, Producer, TopicMessages, TopicNames } from '../kafka/index.js';
import type { Logger } from 'pino';
import { NotStartedError } from '../errors.js';
import { createSendCoalescer } from './send-coalescer.js';
import type { SendCoalescer, SendOutcome } from './send-coalescer.js';

/**
 * Writes of concurrent requests are merged while their values stay under this: below
 * Kafka's default max.message.bytes (1 MiB) per record batch, with room for record
 * overhead.
 */
const MAX_BYTES_PER_SEND = 768 * 1024;

export interface CallWriter {
  /** Creates `calls` and `calls.invalid` if missing, then connects the producer. */
  start(): Promise<void>;
  /** One send with acks=all, resolved when acknowledged or after the send timeout; never throws. */
  send(topicMessages: TopicMessages[], bytes: number): Promise<SendOutcome>;
  stop(): Promise<void>;
  connected(): boolean;
  /** Why the last send failed; undefined once one succeeds. */
  lastSendError(): string | undefined;
}

export function createCallWriter(options: {
  kafka: Kafka;
  /** Kafka settings as read at start. */
  config: Config['kafka'];
  topics: TopicNames;
  logger: Logger;
  sendTimeoutMs: number;
  maxConcurrentSends: number;
}): CallWriter {
  const { kafka, config, topics, logger, sendTimeoutMs } = options;
  let producer: Producer | undefined;
  let sender: SendCoalescer | undefined;
  let producerConnected = false;
  let lastSendError: string | undefined;

  const createTopics = async (): Promise<void> => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const created = await ensureTopics(admin, [{ topic: topics.calls }, { topic: topics.callsInvalid }], {
        partitions: config.partitions,
        replicationFactor: config.replicationFactor,
      });
      if (created.length > 0) logger.info({ topics: created }, 'created topics');
    } finally {
      await admin.disconnect();
    }
  };

  const connectProducer = async (): Promise<void> => {
    const out = createProducer(kafka);
    producer = out;
    out.on(out.events.CONNECT, () => {
      producerConnected = true;
    });
    out.on(out.events.DISCONNECT, () => {
      producerConnected = false;
    });
    await out.connect();
    producerConnected = true;
    sender = createSendCoalescer({
      sendBatch: async (topicMessages) => {
        await out.sendBatch({ acks: -1, timeout: sendTimeoutMs, topicMessages });
      },
      maxConcurrentSends: options.maxConcurrentSends,
      maxBytesPerSend: MAX_BYTES_PER_SEND,
    });
  };

  return {
    async start() {
      await createTopics();
      await connectProducer();
    },
    async send(topicMessages, bytes) {
      if (sender === undefined) return { ok: false, error: new NotStartedError('the producer is not started') };
      // NOTE: kafkajs retries a failing send internally for far longer than a client
      // waits; the timeout bounds the answer. A send that still succeeds after the 503
      // makes a duplicate when the client retries, which the contract allows.
      const outcome = await sender.send(topicMessages, bytes, sendTimeoutMs);
      lastSendError = outcome.ok ? undefined : errorText(outcome.error);
      return outcome;
    },
    async stop() {
      if (producer !== undefined) await producer.disconnect();
      producerConnected = false;
    },
    connected: () => producerConnected,
    lastSendError: () => lastSendError,
  };
}

/** An error for an answer or a health detail: its message, at most 300 characters. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 300);
  return String(error).slice(0, 300);
}
