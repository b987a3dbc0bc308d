// Where an operational event goes once its transition is accepted
// (docs/operations.md#operational-events): a JSON record on `<prefix>operations` (key: the
// destination), and a POST to each of `operations.webhooks`, signed as Standard Webhooks
// (webhook-id = the event's id, webhook-timestamp = the attempt's seconds). A webhook that
// does not take the event is tried a few times, then logged and left: an operations
// webhook down must not hold the events of the topic back.
import type { Logger } from 'pino';
import type { OperationsConfig } from '../config/schema.js';
import { printableUrl } from '../config/mask.js';
import type { RecordProducer } from '../kafka/index.js';
import type { HttpSender } from '../delivery/http-sender.js';
import { webhookTarget } from '../delivery/http-sender.js';
import { decodeStandardSecret, standardSignature } from '../delivery/signing.js';
import { USER_AGENT } from '../version.js';
import type { OperationEvent } from './state-view.js';

/** Attempts per operations webhook and event, the waits between them growing from this. */
const WEBHOOK_ATTEMPTS = 4;
const WEBHOOK_FIRST_WAIT_MS = 500;

/** The headers of one signed POST of `body` (Standard Webhooks, docs/operations.md#operational-events). */
export function operationsWebhookHeaders(secret: string, id: string, nowMs: number, body: string): Record<string, string> {
  const key = decodeStandardSecret(secret);
  // The config refuses a secret that is not whsec_ base64 (schema.ts): a bug otherwise.
  if (key === undefined) throw new Error('operations.webhooks: a secret that is not whsec_<base64> passed the config check');
  const seconds = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': standardSignature(key, id, seconds, body),
  };
}

export interface EventPublisher {
  publish(event: OperationEvent): Promise<void>;
}

export function createEventPublisher(options: {
  topic: string;
  producer: RecordProducer;
  sender: HttpSender;
  operations: () => OperationsConfig;
  logger: Logger;
  sleep?: (ms: number) => Promise<void>;
}): EventPublisher {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const post = async (webhook: { url: string; secret: string }, index: number, event: OperationEvent, body: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const result = await options.sender.send(webhookTarget(webhook.url), Buffer.from(body), operationsWebhookHeaders(webhook.secret, event.id, Date.now(), body));
      if (result.outcome === '2xx') return;
      const reason = 'reason' in result ? result.reason : result.outcome;
      const permanent = 'verdict' in result && result.verdict === 'permanent';
      if (permanent || attempt >= WEBHOOK_ATTEMPTS) {
        options.logger.error({ event: event.id, type: event.type, destination: event.destination, webhook: `operations.webhooks[${index}] ${printableUrl(webhook.url)}`, reason, attempts: attempt }, 'an operations webhook did not take an operational event; it stays on the operations topic');
        return;
      }
      await sleep(WEBHOOK_FIRST_WAIT_MS * 2 ** (attempt - 1));
    }
  };
  return {
    async publish(event) {
      const body = JSON.stringify(event);
      await options.producer.send([{ topic: options.topic, messages: [{ key: event.destination, value: body, headers: { 'event-type': event.type } }] }]);
      await Promise.all(options.operations().webhooks.map((webhook, i) => post(webhook, i, event, body)));
      options.logger.info({ event: event.id, type: event.type, destination: event.destination }, `operational event ${event.type} for destination ${event.destination}`);
    },
  };
}
