import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DeadLetterTap } from './dead-letter-tap.js';
import { VERSION } from '../version.js';
import { CounterBatch, LabeledCounts } from './counter-batch.js';

/** Every metric of docs/metrics.md; names and labels are part of the contract. */
export interface Metrics {
  registry: Registry;
  callsReceived: Counter<'source' | 'type'>;
  callsInvalid: Counter<'reason'>;
  /** Copies of a call dropped by messageId within `router.dedupeWindow` (docs/kafka.md#copies-of-a-call). */
  callsDeduplicated: Counter<'source'>;
  eventsRouted: Counter<'source' | 'destination'>;
  eventsFiltered: Counter<'source' | 'destination' | 'reason'>;
  /** Violations of a source's tracking plan, by event and violation type (docs/tracking-plans.md#violations). */
  trackingPlanViolations: Counter<'source' | 'event' | 'type'>;
  deliveryAttempts: Counter<'destination' | 'outcome'>;
  deliveries: Counter<'destination' | 'result'>;
  /** The router's counts of `callsReceived`, `eventsRouted`, `eventsFiltered` and `callsInvalid` not added yet: added when each is read (counter-batch.ts). */
  routerCounts: {
    received: LabeledCounts<'source' | 'type'>;
    routed: LabeledCounts<'source' | 'destination'>;
    filtered: LabeledCounts<'source' | 'destination' | 'reason'>;
    invalid: LabeledCounts<'reason'>;
    violations: LabeledCounts<'source' | 'event' | 'type'>;
    deduplicated: LabeledCounts<'source'>;
  };
  /** Counts of `deliveryAttempts` and `deliveries` not added yet: added when either is read (counter-batch.ts). */
  deliveryTally: CounterBatch;
  deliveryDuration: Histogram<'destination'>;
  endToEnd: Histogram<'destination'>;
  batchSize: Histogram<'destination'>;
  retryQueueDepth: Gauge<'destination' | 'tier'>;
  consumerLag: Gauge<'group' | 'topic'>;
  audienceChanges: Counter<'audience' | 'change'>;
  audienceMembers: Gauge<'audience'>;
  gatewayRequests: Counter<'route' | 'status'>;
  /** Requests refused with 429 for being over their source's limits (`sources[].limits`). */
  gatewayThrottled: Counter<'source'>;
  /** Deletion requests: `sent` (delete bodies produced), `no_affected_source` (none: no source has seen the user). */
  deletions: Counter<'result'>;
  /** Per webhook URL, by its index in the destination's list (never the URL: it may carry a token). */
  circuitState: Gauge<'destination' | 'url_index'>;
  /** Requests to a destination's OAuth2 token endpoint: `issued` (a token came), `failed` (none did). */
  authTokenRequests: Counter<'destination' | 'result'>;
  /** When the client certificate of a destination's `settings.tls` expires, Unix time in seconds. */
  tlsClientCertExpiry: Gauge<'destination'>;
  /** 1 while a destination's topics could not be created (the deliverer delivers nothing for it and tries again). */
  destinationTopicsUnavailable: Gauge<'destination'>;
  /**
   * Where `switchyard_deliverer_buffered_records` and `_bytes` are read at each scrape:
   * the deliverer's records fetched and not finished (src/kafka/fetch-plan.ts's budget).
   * Returns a function that stops reading it.
   */
  watchBuffered(read: () => { records: number; bytes: number }): () => void;
  /** The dead letters written, with sample message ids, for the `message.dead_lettered` events (not a Prometheus series). */
  deadLetterTap: DeadLetterTap;
  /** Each destination's lifecycle (docs/webhooks.md#automatic-disabling): 1 for its state (`active`, `failing`, `disabled`), 0 for the others. */
  destinationState: Gauge<'destination' | 'state'>;
  /** Config file changes: `applied`, or `refused` (a bad file; the running config kept). */
  configReloads: Counter<'result'>;
  buildInfo: Gauge<'version'>;
}

/**
 * How often prom-client's event-loop delay monitor samples (nodejs_eventloop_lag_*).
 * NOTE: its default, 10 ms, woke an idle process more often than anything else: most of
 * an idle deliverer's wake-ups, and a visible share of its idle CPU at 1,000 destinations
 * (docs/benchmarks.md#figures-behind-the-code). A stall of the loop
 * still shows in the next sample's delay; only stalls shorter than this can be missed.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const registers = [registry];
  let readBuffered: (() => { records: number; bytes: number }) | undefined;
  new Gauge({
    name: 'switchyard_deliverer_buffered_records',
    help: 'Records the deliverer fetched and holds, not finished yet (queued, waiting for a retry, or in flight).',
    registers,
    collect() {
      if (readBuffered !== undefined) this.set(readBuffered().records);
    },
  });
  new Gauge({
    name: 'switchyard_deliverer_buffered_bytes',
    help: 'The bytes of those records as delivery.bufferBudget counts them (the records themselves and their bookkeeping).',
    registers,
    collect() {
      if (readBuffered !== undefined) this.set(readBuffered().bytes);
    },
  });
  const deliveryTally = new CounterBatch();
  const routerCounts = {
    received: new LabeledCounts(['source', 'type'] as const),
    routed: new LabeledCounts(['source', 'destination'] as const),
    filtered: new LabeledCounts(['source', 'destination', 'reason'] as const),
    invalid: new LabeledCounts(['reason'] as const),
    violations: new LabeledCounts(['source', 'event', 'type'] as const),
    deduplicated: new LabeledCounts(['source'] as const),
  };
  return {
    registry,
    callsReceived: new Counter({
      name: 'switchyard_calls_received_total',
      help: 'Calls accepted per source and type, filtered ones included (usage).',
      labelNames: ['source', 'type'],
      registers,
      collect() {
        routerCounts.received.flushInto(this);
      },
    }),
    callsInvalid: new Counter({
      name: 'switchyard_calls_invalid_total',
      help: 'Calls that could not be parsed, validated or attributed, kept in calls.invalid.',
      labelNames: ['reason'],
      registers,
      collect() {
        routerCounts.invalid.flushInto(this);
      },
    }),
    callsDeduplicated: new Counter({
      name: 'switchyard_calls_deduplicated_total',
      help: 'Copies of a call dropped by the router: a call whose (source, messageId) was routed within router.dedupeWindow.',
      labelNames: ['source'],
      registers,
      collect() {
        routerCounts.deduplicated.flushInto(this);
      },
    }),
    eventsRouted: new Counter({
      name: 'switchyard_events_routed_total',
      help: 'Webhook bodies produced to a destination topic.',
      labelNames: ['source', 'destination'],
      registers,
      collect() {
        routerCounts.routed.flushInto(this);
      },
    }),
    eventsFiltered: new Counter({
      name: 'switchyard_events_filtered_total',
      help: 'Events not routed to a connected destination, by reason (integrations, track_filter, disabled, destination_filter, sample, transform_error, tracking_plan).',
      labelNames: ['source', 'destination', 'reason'],
      registers,
      collect() {
        routerCounts.filtered.flushInto(this);
      },
    }),
    trackingPlanViolations: new Counter({
      name: 'switchyard_tracking_plan_violations_total',
      help: "Violations of a source's tracking plan, by event (a track's name, else the call type) and type (unplanned_event, required_missing, type_mismatch, additional_property, other).",
      labelNames: ['source', 'event', 'type'],
      registers,
      collect() {
        routerCounts.violations.flushInto(this);
      },
    }),
    routerCounts,
    deliveryAttempts: new Counter({
      name: 'switchyard_delivery_attempts_total',
      help: 'Webhook requests by outcome (2xx, 4xx, 5xx, timeout, network, tls; blocked: refused by delivery.blockPrivateNetworks; circuit_open: skipped by the URL circuit breaker; no request sent for either).',
      labelNames: ['destination', 'outcome'],
      registers,
      collect: deliveryTally.flush,
    }),
    deliveries: new Counter({
      name: 'switchyard_deliveries_total',
      help: 'Events by delivery result (delivered, retry_scheduled, dead_lettered).',
      labelNames: ['destination', 'result'],
      registers,
      collect: deliveryTally.flush,
    }),
    deliveryTally,
    deliveryDuration: new Histogram({
      name: 'switchyard_delivery_duration_seconds',
      help: 'Duration of one webhook request.',
      labelNames: ['destination'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    batchSize: new Histogram({
      name: 'switchyard_batch_size',
      help: 'Events per batch request of a destination with settings.batch (a 413 split counts each half again).',
      labelNames: ['destination'],
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2000, 4000],
      registers,
    }),
    endToEnd: new Histogram({
      name: 'switchyard_end_to_end_seconds',
      help: 'Time from a call being received to its event being delivered.',
      labelNames: ['destination'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 3600, 14400],
      registers,
    }),
    retryQueueDepth: new Gauge({
      name: 'switchyard_retry_queue_depth',
      help: 'Messages waiting in a retry tier, per destination.',
      labelNames: ['destination', 'tier'],
      registers,
    }),
    consumerLag: new Gauge({
      name: 'switchyard_consumer_lag',
      help: 'Messages not yet consumed by a consumer group, per topic.',
      labelNames: ['group', 'topic'],
      registers,
    }),
    audienceChanges: new Counter({
      name: 'switchyard_audience_changes_total',
      help: 'Audience membership changes (entered, left).',
      labelNames: ['audience', 'change'],
      registers,
    }),
    audienceMembers: new Gauge({
      name: 'switchyard_audience_members',
      help: 'Current members of an audience.',
      labelNames: ['audience'],
      registers,
    }),
    gatewayRequests: new Counter({
      name: 'switchyard_gateway_requests_total',
      help: 'Gateway HTTP requests by route and status code.',
      labelNames: ['route', 'status'],
      registers,
    }),
    gatewayThrottled: new Counter({
      name: 'switchyard_gateway_throttled_total',
      help: 'Gateway requests refused with 429 for being over their source\'s limits (sources[].limits); nothing of them was written.',
      labelNames: ['source'],
      registers,
    }),
    deletions: deletionsCounter(registers),
    circuitState: new Gauge({
      name: 'switchyard_circuit_state',
      help: 'Circuit breaker of each webhook URL (by index): 0 closed, 1 open (skipped, no requests), 2 half-open (a probe is out).',
      labelNames: ['destination', 'url_index'],
      registers,
    }),
    authTokenRequests: new Counter({
      name: 'switchyard_auth_token_requests_total',
      help: 'Requests to the OAuth2 token endpoint of a destination with settings.auth.oauth2, by result: issued (a token came), failed (none did; its events are retried).',
      labelNames: ['destination', 'result'],
      registers,
    }),
    tlsClientCertExpiry: new Gauge({
      name: 'switchyard_tls_client_cert_expiry_seconds',
      help: 'When the client certificate of a destination with settings.tls.clientCert expires, as Unix time in seconds (read at load and at every reload).',
      labelNames: ['destination'],
      registers,
    }),
    destinationTopicsUnavailable: new Gauge({
      name: 'switchyard_destination_topics_unavailable',
      help: 'Destinations whose topics could not be created (1): nothing is delivered for them until they exist; the deliverer tries again every 5 s.',
      labelNames: ['destination'],
      registers,
    }),
    deadLetterTap: new DeadLetterTap(),
    destinationState: new Gauge({
      name: 'switchyard_destination_state',
      help: 'Each destination\'s lifecycle state, 1 for the one it is in: active, failing (no successful attempt for half of settings.autoDisable.after), disabled (by Switchyard, by a person, or enabled: false in the config).',
      labelNames: ['destination', 'state'],
      registers,
    }),
    configReloads: configReloadsCounter(registers),
    buildInfo: buildInfoGauge(registers),
    watchBuffered(read) {
      readBuffered = read;
      return () => {
        if (readBuffered === read) readBuffered = undefined;
      };
    },
  };
}

function configReloadsCounter(registers: Registry[]): Counter<'result'> {
  return resultCounter(registers, 'switchyard_config_reloads_total', 'Config file changes by result: applied, or refused (a bad file; the running config is kept).', ['applied', 'refused']);
}

function deletionsCounter(registers: Registry[]): Counter<'result'> {
  return resultCounter(
    registers,
    'switchyard_deletions_total',
    'Deletion requests by result: sent (delete bodies produced), or no_affected_source (no source with an enabled destination has seen the user).',
    ['sent', 'no_affected_source'],
  );
}

/** A counter by `result` whose every result's series exists from the start, so that increase() sees its first count. */
function resultCounter(registers: Registry[], name: string, help: string, results: readonly string[]): Counter<'result'> {
  const counter = new Counter({ name, help, labelNames: ['result'], registers });
  for (const result of results) counter.inc({ result }, 0);
  return counter;
}

/** Always 1; the version is in the label (join on it to see which version each pod runs). */
function buildInfoGauge(registers: Registry[]): Gauge<'version'> {
  const gauge = new Gauge({ name: 'switchyard_build_info', help: 'The running Switchyard version (value always 1).', labelNames: ['version'], registers });
  gauge.set({ version: VERSION }, 1);
  return gauge;
}
