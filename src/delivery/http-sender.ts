// The one module that owns undici. The rest of the deliverer talks to `HttpSender`:
// send(target, body, headers) → an AttemptResult value.
import { isIP } from 'node:net';
import { Agent, EnvHttpProxyAgent, buildConnector } from 'undici';
import type { Dispatcher } from 'undici';
import { judgeAddress } from '../network/address-rule.js';
import type { AttemptResult } from './classify.js';
import { classifyError, classifyStatus, timedOut } from './classify.js';
import { MAX_RESPONSE_BYTES, responseExcerpt } from './attempt-history.js';
import { BlockedAddressError, guardedLookup, refuseLiteralAddress } from './private-network.js';
import type { ConnectTo, ResolveAll } from './private-network.js';

/** A webhook URL, parsed once per config. */
export interface WebhookTarget {
  /** As configured. */
  url: string;
  origin: string;
  /** Path and query. */
  path: string;
  /** How to connect, when not as every other destination does (`settings.tls`). */
  connection?: ConnectionProfile;
}

/** TLS options of a destination's connections (`settings.tls`, docs/webhooks.md#tls): PEM text, as node:tls takes it. */
export interface TlsOptions {
  cert?: string;
  key?: string;
  ca?: string;
  servername?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** An egress proxy (docs/webhooks.md#egress-proxy): requests go through it (HTTPS by CONNECT) unless the host is in `noProxy`. */
export interface ProxyOptions {
  url: string;
  noProxy: readonly string[];
}

/** Connections made alike share a pool: `key` names them (a digest of the options). */
export interface ConnectionProfile {
  key: string;
  tls?: TlsOptions;
  proxy?: ProxyOptions;
}

export function webhookTarget(url: string, connection?: ConnectionProfile): WebhookTarget {
  const parsed = new URL(url);
  const target: WebhookTarget = { url, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
  if (connection !== undefined) target.connection = connection;
  return target;
}

/** `cancelled`: the caller aborted it (another URL already answered 2xx); its outcome is unknown. */
export type SendResult = (AttemptResult & { durationMs: number }) | { outcome: 'cancelled'; durationMs: number };

/** The answer to a `postForm`: its status and body, or why none came (an AttemptResult of classify.ts). */
export type FormAnswer = { status: number; body: string } | { failure: AttemptResult };

export interface HttpSender {
  send(target: WebhookTarget, body: Buffer, headers: Record<string, string>, cancel?: AbortSignal): Promise<SendResult>;
  /**
   * A small POST whose answer is read (an OAuth2 token request, token-source.ts): on the
   * same pool, so through the same address guard, within the same timeout.
   */
  postForm(target: WebhookTarget, body: string, headers: Record<string, string>): Promise<FormAnswer>;
  close(): Promise<void>;
}

export interface HttpSenderOptions {
  /** The whole request, headers and body of the answer included (`delivery.timeout`). */
  timeoutMs: number;
  /** Response bodies are read and thrown away up to this many bytes; past it the connection is dropped. */
  maxResponseBodyBytes?: number;
  /** `delivery.blockPrivateNetworks`: connect only to global unicast addresses (src/network/address-rule.ts). */
  blockPrivateNetworks?: boolean;
  /**
   * Tests only: the resolver names go through, and where a socket really connects once
   * the guard let an address through (a loopback listener, so that a guard that fails
   * shows up as a request there, never as traffic leaving the machine).
   */
  network?: { resolve: ResolveAll; connectTo: ConnectTo };
}

/** Node's default keeps connections 5 s; receivers usually keep them longer. */
const KEEP_ALIVE_MS = 30_000;
const DEFAULT_MAX_RESPONSE_BODY_BYTES = 64 * 1024;
/** A token endpoint's answer is a small JSON object; past this it is not read. */
const MAX_FORM_ANSWER_BYTES = 64 * 1024;
/** How much later than delivery.timeout (and its one extension for a stall, Attempt.expire) undici's own timeouts fire. */
const BACKSTOP_MARGIN_MS = 1_000;
/** A deadline timer this late means the process stalled (Attempt.expire). */
const STALL_MS = 100;

const TIMED_OUT = new Error('switchyard: no complete answer within delivery.timeout');
const CANCELLED = new Error('switchyard: another URL of the destination already accepted the event');
const BODY_DISCARDED = new Error('switchyard: response body over the size cap; connection dropped');

/**
 * One request, as an undici dispatch handler: no response stream and no AbortSignal
 * (measured: an AbortSignal passed to undici's `request` costs about as much CPU as the
 * rest of the request on a keep-alive connection). The body of the answer is counted
 * and dropped chunk by chunk, never held; of an answer that did not deliver, its first
 * MAX_RESPONSE_BYTES are kept, for the attempt history (docs/webhooks.md#attempt-history).
 */
class Attempt implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private retryAfter: string | undefined;
  private bodyBytes = 0;
  /** The start of the body of an answer other than a 2xx; never allocated for a 2xx. */
  private excerpt: Buffer | undefined;
  private contentEncoding: string | undefined;
  private settled = false;
  private stopReason: Error | undefined;
  private timer: NodeJS.Timeout;
  private readonly started = performance.now();
  /** The deadline was moved once for a stall of this process's own (expire). */
  private extended = false;

  constructor(
    private readonly resolve: (result: SendResult) => void,
    private readonly timeoutMs: number,
    private readonly maxBodyBytes: number,
    private readonly cancel: AbortSignal | undefined,
  ) {
    // NOTE: no closures per request: the timer gets the attempt as its argument and the
    // signal calls handleEvent.
    this.timer = setTimeout(expire, timeoutMs, this);
    cancel?.addEventListener('abort', this, { once: true });
  }

  /**
   * The deadline passed. Timers run before the loop's I/O poll, so when the loop
   * fell behind (a burst of work, a GC pause) an answer already in the socket would lose
   * to this timer: the event is retried although the receiver took it (a duplicate).
   * The decision waits one loop turn (setImmediate runs after the poll): an answer that
   * arrived by then is read first and counts.
   */
  expire(): void {
    if (this.settled) return;
    // NOTE: a timer that fires late says this process stalled (a burst of work, a long GC,
    // a consumer rejoining): the request may not even have left it yet. The receiver gets
    // the time the stall took from it, once and at most one more timeout: our stall must
    // not count as the receiver's timeout (a retry, and a duplicate when it answers).
    const lateMs = performance.now() - this.started - this.timeoutMs;
    if (!this.extended && lateMs >= STALL_MS) {
      this.extended = true;
      this.timer = setTimeout(expire, Math.min(lateMs, this.timeoutMs), this);
      return;
    }
    setImmediate(expireNow, this);
  }

  expireNow(): void {
    if (this.settled) return;
    this.finish(timedOut(this.timeoutMs));
    this.stop(TIMED_OUT);
  }

  /** The cancel signal fired. */
  handleEvent(): void {
    this.finish({ outcome: 'cancelled' });
    this.stop(CANCELLED);
  }

  /** Aborts the request; before it is on a connection, as soon as it gets there. */
  private stop(reason: Error): void {
    this.stopReason = reason;
    if (this.controller && !this.controller.aborted) this.controller.abort(reason);
  }

  finish(result: AttemptResult | { outcome: 'cancelled' }): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.cancel?.removeEventListener('abort', this);
    this.resolve({ ...result, durationMs: performance.now() - this.started });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // NOTE: undici's connect timeout (the backstop) bounds the time before this.
    if (this.stopReason) controller.abort(this.stopReason);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // 1xx informational: the real answer follows
    this.status = statusCode;
    const retryAfter = headers['retry-after'];
    this.retryAfter = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
    if (statusCode >= 300) {
      this.excerpt = Buffer.alloc(0);
      const encoding = headers['content-encoding'];
      this.contentEncoding = Array.isArray(encoding) ? encoding.join(',') : encoding;
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    const before = this.bodyBytes;
    this.bodyBytes += chunk.length;
    // Copied: undici may reuse the chunk's memory once this returns.
    if (this.excerpt !== undefined && before < MAX_RESPONSE_BYTES) this.excerpt = Buffer.concat([this.excerpt, chunk.subarray(0, MAX_RESPONSE_BYTES + 1 - before)]);
    if (this.bodyBytes > this.maxBodyBytes) {
      // The status is all that counts; an enormous or endless body is cut off here.
      this.finish(this.answered());
      controller.abort(BODY_DISCARDED);
    }
  }

  onResponseEnd(): void {
    this.finish(this.answered());
  }

  /** The answer classified, with the start of its body when it did not deliver. */
  private answered(): AttemptResult {
    const result = classifyStatus(this.status, this.retryAfter, Date.now());
    const response = this.excerpt === undefined ? undefined : responseExcerpt(this.excerpt, this.contentEncoding);
    return response === undefined ? result : { ...result, response };
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    // After a timeout, a cancel or the body cap this is our own abort, already settled.
    this.finish(classifyError(error, this.timeoutMs));
  }
}

function expire(attempt: Attempt): void {
  attempt.expire();
}

function expireNow(attempt: Attempt): void {
  attempt.expireNow();
}

/**
 * undici's own connector, with every address checked before the socket connects to it
 * (`guard`): a host that is an IP address here, a name in the DNS lookup the socket
 * makes. NOTE: the lookup is the socket's own, so the address checked is the address
 * connected to (no second resolution that DNS rebinding could answer differently). Node
 * skips the lookup for an IP address, hence the check of the host first; text node takes
 * for an address but the rule cannot read is refused (fail closed).
 */
function checkingConnector(timeoutMs: number, guard: boolean, network: HttpSenderOptions['network'], tls: TlsOptions = {}): buildConnector.connector {
  const connect = buildConnector({ ...tls, timeout: timeoutMs, lookup: guardedLookup({ guard, ...network }) });
  return (options, callback) => {
    const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
    const family = isIP(host);
    if (guard && family !== 0) {
      const refused = refuseLiteralAddress(host) ?? (judgeAddress(host) === undefined ? new BlockedAddressError(host, host, undefined) : undefined);
      if (refused !== undefined) {
        callback(refused, null);
        return;
      }
    }
    if (network !== undefined && family !== 0) {
      connect({ ...options, hostname: network.connectTo({ address: host, family }).address }, callback);
      return;
    }
    connect(options, callback);
  };
}

/**
 * For a request that goes through a proxy with `blockPrivateNetworks`: the receiver's
 * host resolved here and every address judged, as the checking connector does for a
 * direct connection; the error that refuses it, or undefined. NOTE: the proxy resolves
 * the name again when it connects: a DNS answer that changes in between (rebinding) is
 * not seen here; the proxy's own rules are the second line (docs/webhooks.md#egress-proxy).
 */
function hostCheck(resolve: ResolveAll | undefined): (origin: string) => Promise<Error | undefined> {
  const lookup = guardedLookup({ guard: true, ...(resolve === undefined ? {} : { resolve }) });
  return (origin) =>
    new Promise((settle) => {
      const { hostname } = new URL(origin);
      const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
      if (isIP(host) !== 0) {
        const verdict = judgeAddress(host);
        settle(refuseLiteralAddress(host) ?? (verdict === undefined || !verdict.allowed ? new BlockedAddressError(host, host, verdict) : undefined));
        return;
      }
      lookup(host, { all: true }, (error) => settle(error ?? undefined));
    });
}

/**
 * A keep-alive connection pool per origin (an undici Agent). Never follows redirects
 * (undici's dispatch does not), verifies certificates (undici's default: a self-signed
 * certificate fails the handshake, so no request is sent), and never holds a response
 * body: it is discarded as it arrives, with a size cap past which the connection is
 * dropped, so an enormous or endless body cannot exhaust memory.
 */
export function createHttpSender(options: HttpSenderOptions): HttpSender {
  const { timeoutMs } = options;
  const maxBody = options.maxResponseBodyBytes ?? DEFAULT_MAX_RESPONSE_BODY_BYTES;
  // NOTE: the whole-request deadline of Attempt is the one that counts; undici's
  // per-phase timeouts are only a backstop, a second later, so that they never decide
  // before Attempt's look at what arrived (see Attempt.expire).
  const backstopMs = 2 * timeoutMs + BACKSTOP_MARGIN_MS;
  const guard = options.blockPrivateNetworks === true;
  const agentOptions = (tls?: TlsOptions) => ({
    keepAliveTimeout: KEEP_ALIVE_MS,
    keepAliveMaxTimeout: 10 * KEEP_ALIVE_MS,
    connect: guard || options.network !== undefined ? checkingConnector(backstopMs, guard, options.network, tls) : { ...tls, timeout: backstopMs },
    headersTimeout: backstopMs,
    bodyTimeout: backstopMs,
  });
  const makeAgent = (profile?: ConnectionProfile): Agent | EnvHttpProxyAgent => {
    if (profile?.proxy === undefined) return new Agent(agentOptions(profile?.tls));
    // NOTE: every option given, so undici reads nothing from process.env. Hosts in
    // noProxy go straight, through the checking connector; the others through the proxy,
    // which connects to them itself (hence the check before dispatch, in send), with the
    // destination's TLS options on the tunnel to the receiver (requestTls).
    const { url, noProxy } = profile.proxy;
    return new EnvHttpProxyAgent({ ...agentOptions(profile.tls), httpProxy: url, httpsProxy: url, noProxy: noProxy.join(','), requestTls: { ...profile.tls, timeout: backstopMs } });
  };
  const agent = makeAgent();
  // NOTE: one pool per connection profile (a destination's client certificate and CA),
  // kept until close: keep-alive connections are reused across events, so a handshake
  // is not paid per request. A profile a reload left behind holds only idle connections,
  // closed after KEEP_ALIVE_MS.
  const profiles = new Map<string, Agent | EnvHttpProxyAgent>();
  const dispatcherOf = (target: WebhookTarget): Agent | EnvHttpProxyAgent => {
    const { connection } = target;
    if (connection === undefined) return agent;
    let pool = profiles.get(connection.key);
    if (pool === undefined) {
      pool = makeAgent(connection);
      profiles.set(connection.key, pool);
    }
    return pool;
  };
  const checkHost = hostCheck(options.network?.resolve);

  return {
    send(target, body, headers, cancel) {
      return new Promise<SendResult>((resolve) => {
        if (cancel?.aborted) {
          resolve({ outcome: 'cancelled', durationMs: 0 });
          return;
        }
        const attempt = new Attempt(resolve, timeoutMs, maxBody, cancel);
        const dispatch = () => {
          try {
            dispatcherOf(target).dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, attempt);
          } catch (error) {
            attempt.finish(classifyError(error, timeoutMs));
          }
        };
        // Through a proxy the proxy resolves and connects: the receiver's addresses are
        // checked here first (docs/webhooks.md#egress-proxy).
        if (guard && target.connection?.proxy !== undefined) {
          checkHost(target.origin).then(
            (refused) => (refused === undefined ? dispatch() : attempt.finish(classifyError(refused, timeoutMs))),
            (error: unknown) => attempt.finish(classifyError(error, timeoutMs)),
          );
        } else dispatch();
      });
    },
    async postForm(target, body, headers) {
      try {
        const answer = await dispatcherOf(target).request({ origin: target.origin, path: target.path, method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) });
        const chunks: Buffer[] = [];
        let bytes = 0;
        for await (const chunk of answer.body as AsyncIterable<Buffer>) {
          bytes += chunk.length;
          if (bytes > MAX_FORM_ANSWER_BYTES) {
            answer.body.destroy();
            return { failure: { outcome: 'network', verdict: 'retryable', reason: `answer larger than ${MAX_FORM_ANSWER_BYTES} bytes` } };
          }
          chunks.push(chunk);
        }
        return { status: answer.statusCode, body: Buffer.concat(chunks).toString('utf8') };
      } catch (error) {
        if (error instanceof Error && error.name === 'TimeoutError') return { failure: timedOut(timeoutMs) };
        return { failure: classifyError(error, timeoutMs) };
      }
    },
    async close() {
      // destroy, not close: requests still running are past their use once the deliverer stops.
      await Promise.all([agent.destroy(), ...[...profiles.values()].map((pool) => pool.destroy())]);
    },
  };
}
