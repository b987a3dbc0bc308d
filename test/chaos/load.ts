// The load: calls of all six types from several sources, some filtered by design, sent
// as real producers send them — through the gateway (Segment's HTTP API, counted once
// answered 200) and straight to the `calls` topic (counted once Kafka acknowledged).
// A request that fails is sent again, as client libraries do; one never acknowledged
// is "unacknowledged": it may arrive or not.
import { gzipSync } from 'node:zlib';
import { createKafka, createProducer } from '../../src/kafka/index.js';
import type { RecordProducer } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { renderExpectedBody } from './expected-body.js';
import type { Ledger } from './ledger.js';
import type { Random } from './random.js';
import { BLOCKED_EVENT, CATALOG_NAME, expectedDestinations } from './topology.js';
import type { SourceSpec, Topology } from './topology.js';

const CALL_TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;
const BASE_TIME_MS = Date.UTC(2026, 4, 1, 12, 0, 0);
/** Attempts per request before its calls are given up as unacknowledged. */
const ATTEMPTS = 4;
const REQUEST_TIMEOUT_MS = 15_000;

export interface LoadCall {
  n: number;
  messageId: string;
  source: SourceSpec;
  call: Record<string, unknown>;
  destinations: string[];
}

/** `integrations` variants: most calls have none; the others exercise docs/configuration.md#routing, rule 2. */
const INTEGRATIONS: readonly (readonly [Record<string, unknown> | undefined, number])[] = [
  [undefined, 70],
  [{ All: false }, 6],
  [{ All: false, [CATALOG_NAME]: true }, 6],
  [{ [CATALOG_NAME]: false }, 5],
  [{ [CATALOG_NAME]: { note: 'options object' } }, 5],
  [{ All: true, Salesforce: false }, 8],
];

/** A source of the load, each as likely as its share. */
export function pickSource(topology: Topology, random: Random): SourceSpec {
  return random.weighted(topology.sources.filter((s) => s.share > 0).map((s): [SourceSpec, number] => [s, s.share]));
}

/** Builds call `n` of the load: type by turn (all six in every six calls), the rest at random. */
export function makeLoadCall(topology: Topology, source: SourceSpec, ledger: Ledger, random: Random, n: number): LoadCall {
  const type = CALL_TYPES[n % CALL_TYPES.length]!;
  const messageId = ledger.loadMessageId(n);
  const anonymous = type !== 'alias' && random.chance(0.2);
  const call: Record<string, unknown> = {
    type,
    ...(anonymous ? { anonymousId: `anon-${n % 211}` } : { userId: `u-${n % 997}` }),
    messageId,
    timestamp: new Date(BASE_TIME_MS + n * 1_000).toISOString(),
  };
  const context: Record<string, unknown> = { ip: '203.0.113.9', library: { name: 'switchyard-chaos', version: '1.0.0' } };
  switch (type) {
    case 'identify':
      call.traits = { plan: random.pick(['free', 'pro', 'enterprise']), email: `user${n}@example.com`, score: n };
      break;
    case 'track':
      call.event = random.weighted([
        ['Order Completed', 6],
        ['Signed Up', 3],
        [BLOCKED_EVENT, 1],
      ]);
      call.properties = {
        n,
        total: Math.round(random.next() * 1_000_000) / 100,
        label: 'é ✓ 🚀 "quoted" \\ back',
        nested: { list: [1, 2, 3], flag: true },
        ...(random.chance(0.1) ? { note: 'n'.repeat(random.int(100, 3_000)) } : {}),
      };
      break;
    case 'page':
      call.name = 'Pricing';
      call.category = 'Docs';
      call.properties = { path: '/pricing', url: 'https://example.com/pricing', title: 'Pricing', referrer: 'https://example.org/', n };
      break;
    case 'screen':
      call.name = 'Dashboard';
      call.properties = { n };
      context.device = { model: 'Pixel 9', type: 'android' };
      context.os = { name: 'Android', version: '15' };
      context.app = { build: '1042', name: 'Chaos', version: '3.1.0' };
      break;
    case 'group':
      call.groupId = `g-${n % 53}`;
      call.traits = { name: 'Acme', employees: 42, 'key with spaces': 'ok', plan: 'enterprise' };
      break;
    case 'alias':
      call.previousId = `anon-${n}`;
      call.userId = `u-${n % 997}`;
      break;
  }
  call.context = context;
  const integrations = random.weighted(INTEGRATIONS);
  if (integrations !== undefined) call.integrations = integrations;
  const destinations = expectedDestinations(topology, source, call);
  ledger.addLoad(messageId, destinations, renderExpectedBody(call, { messageId, timestamp: call.timestamp as string }));
  return { n, messageId, source, call, destinations };
}

// ---------------------------------------------------------------------------
// Senders

export interface SendOutcome {
  /** The service took it: the gateway answered 200 / 4xx, or Kafka acknowledged. */
  acknowledged: boolean;
  status?: number;
  /** The gateway's answer body, parsed. */
  answer?: Record<string, unknown>;
  attempts: number;
  error?: string;
}

function basic(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
}

/** POSTs to the gateway, again after a 5xx, a 408/429 or a connection error, up to ATTEMPTS times. */
export async function postToGateway(
  baseUrl: string,
  path: string,
  body: Buffer,
  options: { writeKey?: string; gzip?: boolean; traceparent?: string },
): Promise<SendOutcome> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.writeKey !== undefined) headers.authorization = basic(options.writeKey);
  if (options.traceparent !== undefined) headers.traceparent = options.traceparent;
  let payload = body;
  if (options.gzip === true) {
    payload = gzipSync(body);
    headers['content-encoding'] = 'gzip';
  }
  let error = '';
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await response.text();
      let answer: Record<string, unknown> | undefined;
      try {
        answer = JSON.parse(text) as Record<string, unknown>;
      } catch {
        answer = { unparsed: text.slice(0, 200) };
      }
      const retry = response.status >= 500 || response.status === 408 || response.status === 429;
      if (!retry) return { acknowledged: true, status: response.status, answer, attempts: attempt };
      error = `${response.status} ${String(answer.code ?? '')}`;
    } catch (caught) {
      error = caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught);
    }
    if (attempt < ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
  }
  return { acknowledged: false, attempts: ATTEMPTS, error };
}

export interface KafkaWriter {
  /** Writes records to its topic with acks=all, again on failure, up to ATTEMPTS times. */
  write(records: { key: string | null; value: Buffer; headers: Record<string, string> }[]): Promise<SendOutcome>;
  close(): Promise<void>;
}

/**
 * A direct producer: the producer of src/kafka, as the client library's Kafka transport
 * writes. NOTE: not a hand-made kafkajs one: an idempotent kafkajs producer with
 * overlapping sends can acknowledge records it never wrote across a broker restart (see
 * createProducer), which the harness would then count as lost.
 */
export async function createKafkaWriter(brokers: string, topic: string): Promise<KafkaWriter> {
  const kafka = createKafka({ brokers: [brokers], clientId: 'chaos-producer', topicPrefix: '', partitions: 1, replicationFactor: 1 }, silentLogger());
  const producer: RecordProducer = createProducer(kafka);
  await producer.connect();
  return {
    async write(records) {
      let error = '';
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            producer.send([{ topic, messages: records }]),
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error(`no acknowledgement within ${REQUEST_TIMEOUT_MS} ms`)), REQUEST_TIMEOUT_MS);
            }),
          ]);
          return { acknowledged: true, attempts: attempt };
        } catch (caught) {
          error = caught instanceof Error ? caught.message : String(caught);
        } finally {
          clearTimeout(timer);
        }
        if (attempt < ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt));
      }
      return { acknowledged: false, attempts: ATTEMPTS, error };
    },
    close: () => producer.disconnect(),
  };
}

// ---------------------------------------------------------------------------
// Sending the load

export interface LoadStats {
  requests: number;
  retriedRequests: number;
  failedRequests: number;
  /** Answers the harness did not expect for valid calls (a 4xx, an `invalid` list). */
  refusals: string[];
}

export function emptyLoadStats(): LoadStats {
  return { requests: 0, retriedRequests: 0, failedRequests: 0, refusals: [] };
}

/** Sends a group of load calls of one source the way that source's producers do. */
export async function sendLoadCalls(
  calls: readonly LoadCall[],
  target: { gatewayUrl: string; kafka: KafkaWriter },
  ledger: Ledger,
  random: Random,
  stats: LoadStats,
): Promise<void> {
  const first = calls[0];
  if (first === undefined) return;
  const source = first.source;
  let outcome: SendOutcome;
  if (source.writeKey === undefined) {
    outcome = await target.kafka.write(
      calls.map((c) => ({
        key: (c.call.userId ?? c.call.anonymousId) as string,
        value: Buffer.from(JSON.stringify(c.call)),
        headers: { 'source-id': source.id },
      })),
    );
  } else if (calls.length === 1 && random.chance(0.5)) {
    // A single-call route; half of them leave the type to the path.
    const { type, ...rest } = first.call;
    const body = random.chance(0.5) ? rest : first.call;
    const inBody = random.chance(0.2);
    outcome = await postToGateway(target.gatewayUrl, `/v1/${String(type)}`, Buffer.from(JSON.stringify(inBody ? { ...body, writeKey: source.writeKey } : body)), {
      ...(inBody ? {} : { writeKey: source.writeKey }),
      gzip: random.chance(0.2),
    });
  } else {
    const inBody = random.chance(0.2);
    const batch = { batch: calls.map((c) => c.call), ...(inBody ? { writeKey: source.writeKey } : {}) };
    outcome = await postToGateway(target.gatewayUrl, random.chance(0.9) ? '/v1/batch' : '/v1/import', Buffer.from(JSON.stringify(batch)), {
      ...(inBody ? {} : { writeKey: source.writeKey }),
      gzip: random.chance(0.2),
    });
  }
  stats.requests += 1;
  if (outcome.attempts > 1) stats.retriedRequests += 1;
  if (!outcome.acknowledged) {
    stats.failedRequests += 1;
    return;
  }
  if (outcome.status !== undefined && (outcome.status !== 200 || outcome.answer?.invalid !== undefined)) {
    stats.refusals.push(`${outcome.status} ${JSON.stringify(outcome.answer).slice(0, 300)}`);
    return;
  }
  for (const c of calls) ledger.acknowledge(c.messageId, 'valid');
}
