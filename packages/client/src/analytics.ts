/**
 * The client: `new Analytics(writeKey, options)`, then identify/track/page/screen/
 * group/alias. Each call is checked at once (a bad one throws, nothing is queued),
 * queued in memory and sent in the background in batches; flush() and close() wait
 * until the queue has been accepted.
 */
import { randomUUID } from 'node:crypto';
import { buildCall } from './calls.js';
import type { AliasCall, CallInputs, GroupCall, IdentifyCall, PageCall, ScreenCall, TrackCall } from './calls.js';
import { createDebugLog, debugEnabled, redact, stderrSink } from './debug.js';
import type { DebugLog } from './debug.js';
import { Dispatcher } from './dispatcher.js';
import { AnalyticsClosedError, AnalyticsConfigError } from './errors.js';
import type { AnalyticsDeliveryError } from './errors.js';
import { createHttpTransport } from './http-transport.js';
import { checkKafkajsInstalled, createKafkaTransport } from './kafka-transport.js';
import type { KafkaTransportOptions } from './kafka-transport.js';
import type { Transport } from './transport.js';
import { VERSION } from './version.js';

export const DEFAULT_ENDPOINT = 'http://localhost:8080';
export const CLIENT_USER_AGENT = `switchyard-client/${VERSION}`;
const LIBRARY = { name: 'switchyard-client', version: VERSION };

export interface AnalyticsOptions {
  /** The gateway's base URL; calls go to `<endpoint>/v1/batch`. Default `http://localhost:8080`. */
  endpoint?: string;
  /** Write to the calls topic through a kafkajs producer instead of HTTP. */
  kafka?: KafkaTransportOptions;
  /** Any other way of sending (tests, proxies). */
  transport?: Transport;
  /** Send once this many calls are queued. Default 20; 1 sends every call at once. */
  flushAt?: number;
  /** Send what is queued once this many milliseconds have passed since the last flush. Default 5000. */
  flushAfter?: number;
  /** Retries of a batch after its first attempt (5xx, 408, 429, network errors). Default 10. */
  maxRetries?: number;
  /** First retry delay in ms, doubling per retry, with jitter. Default 100. */
  minRetryDelay?: number;
  /** Longest retry delay in ms (a server's Retry-After is followed as given, up to 5 minutes). Default 30000. */
  maxRetryDelay?: number;
  /** HTTP only: ms to wait for a complete answer before retrying. Default 10000. */
  requestTimeout?: number;
  /** Calls that may wait in memory; past it, calls throw AnalyticsQueueFullError. Default 10000. */
  maxQueuedCalls?: number;
  /**
   * Told about a batch that was not accepted (refused, or out of retries), with its
   * calls, when no flush() or close() was waiting for it: each failure is reported
   * once, either as the rejection of the flush()/close() that waited for it or here.
   * Default: one line on stderr.
   */
  onError?: (error: AnalyticsDeliveryError) => void;
  /** Log what is queued and sent. Default: on when env DEBUG includes `analytics`. */
  debug?: boolean;
  /** Where log lines go. Default: stderr. */
  logger?: (line: string) => void;
}

const DEFAULTS = {
  flushAt: 20,
  flushAfter: 5_000,
  maxRetries: 10,
  minRetryDelay: 100,
  maxRetryDelay: 30_000,
  requestTimeout: 10_000,
  maxQueuedCalls: 10_000,
};

export class Analytics {
  private readonly dispatcher: Dispatcher;
  private readonly transport: Transport;
  private readonly log: DebugLog;
  private closing: Promise<void> | undefined;

  constructor(writeKey: string, options: AnalyticsOptions = {}) {
    if (typeof writeKey !== 'string') {
      throw new AnalyticsConfigError("new Analytics(writeKey, options): writeKey must be the source's write key, a string");
    }
    const transports = [options.endpoint, options.kafka, options.transport].filter((t) => t !== undefined).length;
    if (transports > 1) {
      throw new AnalyticsConfigError('set only one of endpoint (HTTP), kafka (a kafkajs producer) or transport');
    }
    if (options.kafka === undefined && options.transport === undefined && writeKey === '') {
      throw new AnalyticsConfigError("writeKey is empty: pass the source's write key, as configured in the gateway's sources");
    }
    const flushAt = integerOption(options, 'flushAt', 1);
    const flushAfter = integerOption(options, 'flushAfter', 1);
    const maxRetries = integerOption(options, 'maxRetries', 0);
    const minRetryDelay = integerOption(options, 'minRetryDelay', 0);
    const maxRetryDelay = integerOption(options, 'maxRetryDelay', minRetryDelay);
    const requestTimeout = integerOption(options, 'requestTimeout', 1);
    const maxQueuedCalls = integerOption(options, 'maxQueuedCalls', 1);

    // NOTE: DEBUG is the one variable this library reads (the seed's DEBUG=analytics);
    // read once, here, so behaviour never changes under a running client.
    const debug = options.debug ?? debugEnabled(process.env.DEBUG);
    const sink = options.logger ?? stderrSink;
    const secrets = secretsOf(writeKey, options.kafka);
    this.log = createDebugLog(debug, sink, secrets);

    this.transport = options.transport ?? this.createTransport(writeKey, options, requestTimeout, secrets);
    const onError =
      options.onError ??
      ((error: AnalyticsDeliveryError) => {
        try {
          sink(`analytics: ${redact(error.message, secrets)}`);
        } catch {
          // Nothing left to tell.
        }
      });
    this.dispatcher = new Dispatcher({
      transport: this.transport,
      flushAt,
      flushAfterMs: flushAfter,
      maxRetries,
      minRetryDelayMs: minRetryDelay,
      maxRetryDelayMs: maxRetryDelay,
      maxQueuedCalls,
      onError,
      log: this.log,
    });
    this.log(`client ready: sending to ${this.transport.description}, flushAt ${flushAt}, flushAfter ${flushAfter} ms`);
  }

  /** Who the user is and what is known about them. Returns the call's messageId. */
  identify(call: IdentifyCall): string {
    return this.enqueue('identify', call);
  }

  /** Something the user did. Returns the call's messageId. */
  track(call: TrackCall): string {
    return this.enqueue('track', call);
  }

  /** A page the user saw. Returns the call's messageId. */
  page(call: PageCall): string {
    return this.enqueue('page', call);
  }

  /** A screen of a mobile app the user saw. Returns the call's messageId. */
  screen(call: ScreenCall): string {
    return this.enqueue('screen', call);
  }

  /** The user belongs to a group (company, team, account). Returns the call's messageId. */
  group(call: GroupCall): string {
    return this.enqueue('group', call);
  }

  /** The user known as `previousId` is now `userId`. Returns the call's messageId. */
  alias(call: AliasCall): string {
    return this.enqueue('alias', call);
  }

  /**
   * Sends everything queued so far; resolves once all of it was accepted, rejects with
   * an AnalyticsDeliveryError (holding the calls) when some was not. A failure reported
   * this way is not also passed to onError.
   */
  flush(): Promise<void> {
    return this.dispatcher.flush();
  }

  /**
   * Refuses further calls, sends what is queued, then disconnects. Resolves once
   * everything was accepted; rejects like flush() otherwise (and, like flush(), then
   * does not call onError). Safe to call twice.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.log(`closing: sending ${this.dispatcher.queued} queued calls`);
    let failure: unknown;
    try {
      await this.dispatcher.drainAndStop();
    } catch (err) {
      failure = err;
    }
    // NOTE: the transport closes even when draining failed: a producer left connected
    // would keep the application's process alive.
    try {
      await this.transport.close();
    } catch (err) {
      failure ??= err;
    }
    this.log('closed');
    if (failure !== undefined) throw failure;
  }

  private enqueue<T extends keyof CallInputs>(type: T, input: CallInputs[T]): string {
    if (this.closing !== undefined) throw new AnalyticsClosedError(type);
    const call = buildCall(type, input, Date.now(), randomUUID, LIBRARY, this.transport.limits);
    this.dispatcher.enqueue(call);
    return call.messageId;
  }

  private createTransport(writeKey: string, options: AnalyticsOptions, timeoutMs: number, secrets: string[]): Transport {
    if (options.kafka !== undefined) {
      checkKafkaOptions(options.kafka);
      checkKafkajsInstalled();
      return createKafkaTransport(options.kafka, this.log);
    }
    return createHttpTransport({
      endpoint: options.endpoint ?? DEFAULT_ENDPOINT,
      writeKey,
      timeoutMs,
      userAgent: CLIENT_USER_AGENT,
      redact: (text) => redact(text, secrets),
    });
  }
}

type IntegerOption = 'flushAt' | 'flushAfter' | 'maxRetries' | 'minRetryDelay' | 'maxRetryDelay' | 'requestTimeout' | 'maxQueuedCalls';

function integerOption(options: AnalyticsOptions, name: IntegerOption, min: number): number {
  const value = options[name] ?? DEFAULTS[name];
  if (!Number.isSafeInteger(value) || value < min) {
    throw new AnalyticsConfigError(`option ${name} must be a whole number of at least ${min}; got ${String(value)}`);
  }
  return value;
}

function checkKafkaOptions(kafka: KafkaTransportOptions): void {
  if (!Array.isArray(kafka.brokers) || kafka.brokers.length === 0 || !kafka.brokers.every((b) => typeof b === 'string' && b !== '')) {
    throw new AnalyticsConfigError('kafka.brokers must list at least one broker as "host:port", e.g. ["localhost:9092"]');
  }
  if (typeof kafka.sourceId !== 'string' || kafka.sourceId === '') {
    throw new AnalyticsConfigError("kafka.sourceId must be the id of this source in the router's config (sent as header source-id)");
  }
  if (kafka.topic !== undefined && (typeof kafka.topic !== 'string' || kafka.topic === '')) {
    throw new AnalyticsConfigError('kafka.topic must be the calls topic, "<topicPrefix>calls" (default "switchyard.calls")');
  }
}

/** Text that must never appear in a log line: the write key, its Basic form, Kafka SASL secrets. */
function secretsOf(writeKey: string, kafka: KafkaTransportOptions | undefined): string[] {
  const secrets = [writeKey, Buffer.from(`${writeKey}:`, 'utf8').toString('base64')];
  const sasl = kafka?.sasl as { password?: unknown; secretAccessKey?: unknown; sessionToken?: unknown } | undefined;
  for (const value of [sasl?.password, sasl?.secretAccessKey, sasl?.sessionToken]) {
    if (typeof value === 'string') secrets.push(value);
  }
  return secrets.filter((secret) => secret !== '');
}
