// The document of `GET /v1/destinations` (docs/admin-api.md#get-v1destinations): one row
// per configured destination, failing first, from what this process knows (its last
// minute of deliveries, its lanes' circuits) and what Kafka knows (lag, retry backlog,
// dead letters), and which pod answered. Its type: answers.ts.
import type { Logger } from 'pino';
import { formatTimestamp } from '../calls/index.js';
import { webhookLabel } from '../config/mask.js';
import type { Config } from '../config/schema.js';
import type { ConfigStore } from '../config/store.js';
import type { DelivererStatus } from '../delivery/deliverer-service.js';
import type { UrlStatus } from '../delivery/url-circuits.js';
import { KafkaUnavailableError } from '../errors.js';
import { createAdmin, createOffsetReader, isKafkaClientError } from '../kafka/index.js';
import { recordGapReader } from '../observability/record-gaps.js';
import type { KafkaClient } from '../kafka/index.js';
import type { RecentDeliveries, RecentFigures, WindowFigures } from '../observability/recent-deliveries.js';
import type { HourFigures, MinuteHistory } from '../observability/minute-history.js';
import { compareRows, judgeDestination } from './destination-health.js';
import type { KafkaFigures } from './destination-health.js';
import { readKafkaFigures } from './destination-kafka.js';
import { createRecordCounter } from '../observability/record-counts.js';
import type { RecordCounter } from '../observability/record-counts.js';
import type { DestinationLifecycle } from '../lifecycle/lifecycle-state.js';
import type { AnsweredBy, DestinationRow, DestinationsDocument, LifecycleRow, UrlRow } from './answers.js';

export interface DestinationsStatusOptions {
  config: Pick<ConfigStore, 'current'>;
  kafka: KafkaClient;
  answeredBy: AnsweredBy;
  /** With a deliverer in this process: its last minute, and its lanes. */
  recent?: RecentDeliveries | undefined;
  /** With a deliverer in this process: its last hour, minute by minute. */
  hour?: MinuteHistory | undefined;
  deliverer?: DelivererStatus | undefined;
  /** Each destination's lifecycle, from `destinations.state`. */
  lifecycle?: ((id: string) => DestinationLifecycle) | undefined;
  logger: Logger;
  nowMs?: () => number;
  /** How long Kafka's figures are reused (several consoles refreshing cost one read). */
  kafkaTtlMs?: number;
  /** A read of Kafka's figures that takes longer is given up (the rest of the answer comes without them). */
  kafkaTimeoutMs?: number;
}

const DEFAULT_KAFKA_TTL_MS = 5_000;
const DEFAULT_KAFKA_TIMEOUT_MS = 10_000;

type KafkaRead = { ok: true; atMs: number; figures: Map<string, KafkaFigures> } | { ok: false; atMs: number; error: string };

/** Makes the document on each call; Kafka's part is cached for `kafkaTtlMs` and read once at a time. */
export function createDestinationsStatus(options: DestinationsStatusOptions): () => Promise<DestinationsDocument> {
  const now = options.nowMs ?? Date.now;
  const ttlMs = options.kafkaTtlMs ?? DEFAULT_KAFKA_TTL_MS;
  let cached: { config: Config; startedMs: number; read: Promise<KafkaRead> } | undefined;
  const counter = createRecordCounter();
  const kafkaFigures = (config: Config): Promise<KafkaRead> => {
    if (cached === undefined || cached.config !== config || now() - cached.startedMs >= ttlMs) {
      cached = { config, startedMs: now(), read: readKafka(options, config, counter, now) };
    }
    return cached.read;
  };
  return async () => {
    const config = options.config.current();
    const [kafka, recent, hour] = await Promise.all([kafkaFigures(config), options.recent?.figures(), options.hour?.figures()]);
    const nowMs = now();
    const statuses = options.deliverer?.urlStatuses();
    const destinations = config.destinations.map((d) => row(d, { recent, hour, statuses, kafka, nowMs, lifecycle: options.lifecycle?.(d.id) })).sort(compareRows);
    return {
      answeredBy: options.answeredBy,
      at: formatTimestamp(nowMs),
      notes: notes(options, recent),
      kafka: kafka.ok ? { ok: true, readAt: formatTimestamp(kafka.atMs) } : { ok: false, error: kafka.error },
      destinations,
    };
  };
}

function row(
  destination: Config['destinations'][number],
  known: { recent: RecentFigures | undefined; hour: HourFigures | undefined; statuses: Map<string, UrlStatus[]> | undefined; kafka: KafkaRead; nowMs: number; lifecycle: DestinationLifecycle | undefined },
): DestinationRow {
  const { id, enabled } = destination;
  const figures = known.recent?.byDestination.get(id);
  const lanes = known.statuses?.get(id);
  const urls = destination.settings.webhooks.map((webhook, index) => ({ label: webhookLabel(index, webhook.url), status: lanes?.[index] }));
  const kafka = known.kafka.ok ? known.kafka.figures.get(id) : undefined;
  const verdict = judgeDestination({
    enabled,
    recent: figures === undefined || known.recent === undefined ? undefined : { seconds: known.recent.seconds, figures },
    urls: lanes === undefined ? undefined : urls.flatMap((u) => (u.status === undefined ? [] : [{ ...u.status, label: u.label }])),
    kafka,
    nowMs: known.nowMs,
    ...(known.lifecycle === undefined ? {} : { lifecycle: known.lifecycle }),
  });
  return {
    id,
    enabled,
    lifecycle: known.lifecycle === undefined ? null : lifecycleRow(known.lifecycle),
    ...verdict,
    lastMinute: known.recent === undefined ? null : { seconds: known.recent.seconds, ...(figures ?? emptyFigures()) },
    lastHour: known.hour === undefined ? null : lastHour(known.hour, id),
    urls: urls.map(({ label, status }, index) => urlRow(index, label, status)),
    consumerLag: kafka?.consumerLag ?? null,
    retryBacklog: kafka?.retryBacklog ?? null,
    deadLetters: kafka?.deadLetters ?? null,
  };
}

function lifecycleRow(lifecycle: DestinationLifecycle): LifecycleRow {
  const row: LifecycleRow = { state: lifecycle.state, history: [] };
  if (lifecycle.since > 0) row.since = formatTimestamp(lifecycle.since);
  if (lifecycle.by !== undefined) row.by = lifecycle.by;
  if (lifecycle.reason !== undefined) row.reason = lifecycle.reason;
  row.history = lifecycle.history.map((h) => ({ type: h.type, at: formatTimestamp(h.at), ...(h.by === undefined ? {} : { by: h.by }), ...(h.reason === undefined ? {} : { reason: h.reason }) }));
  return row;
}

function urlRow(index: number, url: string, status: UrlStatus | undefined): UrlRow {
  if (status === undefined) return { index, url, circuit: null };
  const row: UrlRow = { index, url, circuit: status.state, failures: status.failures };
  if (status.nextProbeAtMs !== undefined) row.nextProbeAt = formatTimestamp(status.nextProbeAtMs);
  if (status.lastFailure !== undefined) row.lastFailure = { at: formatTimestamp(status.lastFailure.atMs), outcome: status.lastFailure.outcome, reason: status.lastFailure.reason };
  if (status.lastSuccessAtMs !== undefined) row.lastSuccessAt = formatTimestamp(status.lastSuccessAtMs);
  if (status.failingSinceMs !== undefined) row.failingSince = formatTimestamp(status.failingSinceMs);
  return row;
}

function lastHour(hour: HourFigures, id: string): NonNullable<DestinationRow['lastHour']> {
  const series = hour.byDestination.get(id);
  const zeros = () => new Array<number>(hour.minutes).fill(0);
  return { from: formatTimestamp(hour.fromMs), delivered: series?.delivered ?? zeros(), failed: series?.failed ?? zeros() };
}

function emptyFigures(): WindowFigures {
  return { delivered: 0, eventsPerSecond: 0, retryScheduled: 0, deadLettered: 0, errorRate: null, attempts: {}, p95AttemptSeconds: null };
}

/** What a person should know about where the figures come from, and what this process lacks. */
function notes(options: DestinationsStatusOptions, recent: RecentFigures | undefined): string[] {
  const { role, pod } = options.answeredBy;
  const out: string[] = [];
  if (options.deliverer === undefined) {
    out.push(
      `this process (${pod}, role ${role}) runs no deliverer: no figures of the last minute and no circuit states here; ask a deliverer pod for them (kubectl port-forward deploy/switchyard-deliverer 9464)`,
    );
  } else if (role === 'deliverer') {
    out.push(`the last minute and the circuits are this pod's (${pod}): with several deliverer pods, each delivers its share of the partitions`);
  }
  if (recent !== undefined && recent.seconds < 59) out.push(`the "last minute" covers the ${Math.round(recent.seconds)} s since this process started`);
  out.push('consumer lag, retry backlog and dead letters are read from Kafka: the same from every pod');
  return out;
}

async function readKafka(options: DestinationsStatusOptions, config: Config, counter: RecordCounter, now: () => number): Promise<KafkaRead> {
  const admin = createAdmin(options.kafka);
  const offsets = createOffsetReader(options.kafka);
  const gaps = recordGapReader(offsets);
  const timeoutMs = options.kafkaTimeoutMs ?? DEFAULT_KAFKA_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KafkaUnavailableError(`Kafka did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  const reading = admin.connect().then(() => readKafkaFigures({ admin, gaps, counter }, config));
  reading.catch(() => undefined);
  try {
    const figures = await Promise.race([reading, deadline]);
    return { ok: true, atMs: now(), figures };
  } catch (error) {
    if (!isKafkaClientError(error) && !(error instanceof KafkaUnavailableError)) throw error;
    options.logger.warn({ err: error }, 'destinations status: Kafka did not answer; answering without its figures');
    return { ok: false, atMs: now(), error: `${(error as Error).message} (Kafka at ${config.kafka.brokers.join(',')}): lag, retry backlog and dead letters are unknown` };
  } finally {
    clearTimeout(timer);
    await Promise.all([admin.disconnect().catch(() => undefined), offsets.close().catch(() => undefined)]);
  }
}
