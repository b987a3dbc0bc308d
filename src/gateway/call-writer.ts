// The gateway's Kafka side: its two topics (the topology's `gateway()`), and the port's
// producer (acks=all; it merges the sends of concurrent requests: src/kafka/producer.ts).
// Every write of a request goes out as ONE send.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { NotStartedError } from '../errors.js';
import { createAdmin, createProducer } from '../kafka/index.js';
import type { KafkaClient, RecordProducer, TopicRecords } from '../kafka/index.js';
import { sendCalls } from './send-calls.js';
import type { SendOutcome } from './send-calls.js';
import type { Topology } from '../runtime/topology.js';

export interface CallWriter {
  /** Creates `calls` and `calls.invalid` if missing, then connects the producer. */
  start(): Promise<void>;
  /** One send with acks=all, resolved when acknowledged or after the send timeout; never throws. */
  send(records: TopicRecords[]): Promise<SendOutcome>;
  stop(): Promise<void>;
  connected(): boolean;
  /** Why the last send failed; undefined once one succeeds. */
  lastSendError(): string | undefined;
}

export function createCallWriter(options: {
  kafka: KafkaClient;
  /** Kafka settings as read at start. */
  config: Config['kafka'];
  topology: Topology;
  logger: Logger;
  sendTimeoutMs: number;
  maxConcurrentSends: number;
}): CallWriter {
  const { kafka, config, topology, logger, sendTimeoutMs } = options;
  let producer: RecordProducer | undefined;
  let lastSendError: string | undefined;

  const createTopics = async (): Promise<void> => {
    const admin = createAdmin(kafka);
    await admin.connect();
    try {
      const created = await admin.ensureTopics(topology.gateway(), config);
      if (created.length > 0) logger.info({ topics: created }, 'created topics');
    } finally {
      await admin.disconnect();
    }
  };

  return {
    async start() {
      await createTopics();
      const out = createProducer(kafka, { maxConcurrentSends: options.maxConcurrentSends, ackTimeoutMs: sendTimeoutMs });
      producer = out;
      await out.connect();
    },
    async send(records) {
      if (producer === undefined) return { ok: false, error: new NotStartedError('the producer is not started') };
      // NOTE: the Kafka client retries a failing send for far longer than a client waits
      // (about 30 s: src/kafka/platformatic-client.ts); the timeout bounds the answer. A
      // send that still succeeds after the 503 makes a duplicate when the client retries,
      // which the contract allows.
      const outcome = await sendCalls(producer, records, sendTimeoutMs);
      lastSendError = outcome.ok ? undefined : errorText(outcome.error);
      return outcome;
    },
    async stop() {
      if (producer !== undefined) await producer.disconnect();
    },
    connected: () => producer?.connected() ?? false,
    lastSendError: () => lastSendError,
  };
}

/** An error for an answer or a health detail: its message, at most 300 characters. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 300);
  return String(error).slice(0, 300);
}
