// Real local webhook receivers (HTTP on loopback, port 0) that misbehave as the
// topology says, and record what reached them: per messageId and per trace id, how
// many requests came and how many got a 2xx the deliverer could see.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Random } from './random.js';
import type { ReceiverSpec } from './topology.js';
import type { Arrivals } from './verdict.js';

/** The hostile answers of a failing receiver. */
export const FAILURES = [
  'status-500',
  'status-503-retry-after',
  'hang',
  'reset',
  'too-slow',
  'enormous-body',
  'endless-body',
  'redirect',
] as const;
export type Failure = (typeof FAILURES)[number];


export interface ChaosReceiver {
  readonly name: string;
  url(): string;
  /** Per call, by the key the harness gives it (`keyOf`). */
  readonly arrivals: Map<string, Arrivals>;
  /**
   * Per call, its first delivery: the body's user (userId, else anonymousId) and the
   * place of that delivery among all receivers' deliveries (for the per-user order check,
   * user-order.ts).
   */
  readonly firstDeliveries: Map<string, { user: string | undefined; seq: number }>;
  /** Contract breaches seen on arrival (bad signature, missing headers, a followed redirect, a wrong body). */
  readonly problems: string[];
  problemCount(): number;
  readonly failuresServed: Map<Failure | 'outage', number>;
  requests(): number;
  /** Events of the requests received and not yet answered (or closed): at a deliverer's SIGKILL, those it cannot know arrived. */
  eventsInFlight(): number;
  lastRequestAt(): number;
  /** Until `untilMs`, every request gets a 503 (a receiver outage). */
  outageUntil(untilMs: number): void;
  close(): Promise<void>;
}

/** One event of a request: the harness's key for its call, and its user. */
interface Received {
  key: string;
  user: string | undefined;
}

export interface ReceiverOptions {
  spec: ReceiverSpec;
  random: Random;
  /** `delivery.timeout` of the run: "too slow" answers come after it. */
  deliveryTimeoutMs: number;
  /** The destination's shared secret, to verify X-Signature. */
  sharedSecret: string | undefined;
  /** The harness's key for a call, from the body's messageId and the traceparent's trace id. */
  keyOf(messageId: string | undefined, traceId: string | undefined): string;
  /** Compares the first body of each call with what the harness expects; a description of the difference, if any. */
  checkBody(key: string, body: string): string | undefined;
}

const HOOK_PATH = '/hook';
const REDIRECT_PATH = '/moved';
const CHUNK = Buffer.alloc(16 * 1024, 'x');
const ENORMOUS_BYTES = 64 * 1024 * 1024;
const MAX_PROBLEMS = 50;


/** The trace id (second field) of a W3C traceparent. */
export function traceIdOf(traceparent: string | string[] | undefined): string | undefined {
  const value = Array.isArray(traceparent) ? traceparent[0] : traceparent;
  const match = /^[0-9a-f]{2}-([0-9a-f]{32})-/.exec(value ?? '');
  return match?.[1];
}

/** The events of a body: one, or each element of a batch's array (docs/webhooks.md#batches), with its own bytes. */
function eventsOf(body: string): { messageId: string | undefined; user: string | undefined; text: string }[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ messageId: undefined, user: undefined, text: body }];
  }
  const one = (value: unknown, text: string) => {
    const event = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    const user = typeof event.userId === 'string' ? event.userId : typeof event.anonymousId === 'string' ? event.anonymousId : undefined;
    return { messageId: typeof event.messageId === 'string' ? event.messageId : undefined, user, text };
  };
  // NOTE: an element's bytes are JSON.stringify of it: the router writes every body with JSON.stringify, which this gives back unchanged.
  if (body.startsWith('[') && Array.isArray(parsed)) return parsed.map((element) => one(element, JSON.stringify(element)));
  return [one(parsed, body)];
}

/**
 * Runs `fn` once the event loop has polled its sockets again. NOTE: a setImmediate callback
 * runs right after the poll phase under way, before the loop polls again: a close that
 * arrived meanwhile is read only in the next poll, so the second setImmediate follows it
 * (checked: a client's close sent while a handler ran 200 ms is seen by the second, not by
 * the first).
 */
function afterNextPoll(fn: () => void): void {
  setImmediate(() => setImmediate(fn));
}

/** Counts deliveries over every receiver of the run: the order of first deliveries. */
let deliveriesSeen = 0;

/** Writes `total` bytes (Infinity: forever) at the pace the client reads them, until it goes away. */
function streamBody(res: ServerResponse, total: number): void {
  let sent = 0;
  const pump = (): void => {
    while (!res.destroyed && sent < total) {
      sent += CHUNK.length;
      if (!res.write(CHUNK)) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

export async function startChaosReceiver(options: ReceiverOptions): Promise<ChaosReceiver> {
  const { spec, random } = options;
  const arrivals = new Map<string, Arrivals>();
  const firstDeliveries = new Map<string, { user: string | undefined; seq: number }>();
  const problems: string[] = [];
  const failuresServed = new Map<Failure | 'outage', number>();
  const sockets = new Set<Socket>();
  let problemCount = 0;
  let requests = 0;
  let eventsInFlight = 0;
  let lastRequestAt = 0;
  let outageUntil = 0;

  const problem = (text: string): void => {
    problemCount += 1;
    if (problems.length < MAX_PROBLEMS) problems.push(`${spec.name}: ${text}`);
  };

  const checkContract = (req: IncomingMessage, body: Buffer): void => {
    if (req.url !== HOOK_PATH) problem(`request to ${req.url ?? '?'}: a redirect was followed or the URL is wrong`);
    if (req.method !== 'POST') problem(`method ${req.method ?? '?'} instead of POST`);
    if (req.headers['content-type'] !== 'application/json') problem(`Content-Type ${String(req.headers['content-type'])}`);
    if (!/^switchyard\/\S+$/.test(req.headers['user-agent'] ?? '')) problem(`User-Agent ${String(req.headers['user-agent'])}`);
    if (req.headers['x-chaos-receiver'] !== spec.name) problem(`static header X-Chaos-Receiver is ${String(req.headers['x-chaos-receiver'])}`);
    const signature = req.headers['x-signature'];
    if (options.sharedSecret === undefined) {
      if (signature !== undefined) problem('X-Signature sent although the destination has no shared secret');
    } else {
      const expected = createHmac('sha1', options.sharedSecret).update(body).digest('hex');
      if (signature !== expected) problem(`X-Signature ${String(signature)} does not match the body (expected ${expected})`);
    }
  };

  /** Counts a request for its call; the first one of each call has its body checked. */
  const arrived = (key: string, text: string): void => {
    let entry = arrivals.get(key);
    if (entry === undefined) {
      entry = { requests: 0, delivered: 0 };
      arrivals.set(key, entry);
      const difference = options.checkBody(key, text);
      if (difference !== undefined) problem(`body of ${key}: ${difference}`);
    }
    entry.requests += 1;
  };

  /** Marks the calls delivered: a 2xx status line went out on a connection the deliverer still holds. */
  const delivered = (events: readonly Received[]): void => {
    for (const { key, user } of events) {
      const entry = arrivals.get(key);
      if (entry !== undefined) {
        entry.delivered += 1;
        (entry.deliveredAt ??= []).push(Date.now());
      }
      deliveriesSeen += 1;
      if (!firstDeliveries.has(key)) firstDeliveries.set(key, { user, seq: deliveriesSeen });
    }
  };

  /**
   * Whether the deliverer still holds the connection. NOTE: under load this process runs
   * late, and a close the deliverer sent at its timeout can wait unread in the socket:
   * a 2xx written then never reaches the deliverer (it retries), yet would count as
   * delivered here, a duplicate that is this process's lag. The answer therefore waits
   * for the loop to poll its sockets once more (`afterNextPoll`) before this check.
   */
  const stillHeld = (req: IncomingMessage, res: ServerResponse): boolean => !res.destroyed && !req.socket.destroyed && !req.socket.readableEnded;

  const answer200 = (req: IncomingMessage, res: ServerResponse, key: readonly Received[]): void => {
    afterNextPoll(() => {
      if (!stillHeld(req, res)) return; // the deliverer gave up: not delivered
      delivered(key);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  };

  const fail = (failure: Failure, req: IncomingMessage, res: ServerResponse, key: readonly Received[]): void => {
    failuresServed.set(failure, (failuresServed.get(failure) ?? 0) + 1);
    switch (failure) {
      case 'status-500':
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('chaos: internal error');
        return;
      case 'status-503-retry-after':
        res.writeHead(503, { 'retry-after': '1' });
        res.end();
        return;
      case 'hang':
        return; // the deliverer's timeout ends it; close() destroys what is left
      case 'reset':
        req.socket.destroy();
        return;
      case 'too-slow':
        setTimeout(() => answer200(req, res, key), options.deliveryTimeoutMs * 1.5);
        return;
      case 'enormous-body':
        res.writeHead(500, { 'content-type': 'text/plain', 'content-length': ENORMOUS_BYTES });
        streamBody(res, ENORMOUS_BYTES);
        return;
      case 'endless-body':
        // A 2xx whose body never ends: the deliverer must take the status and drop the rest.
        afterNextPoll(() => {
          if (!stillHeld(req, res)) return;
          delivered(key);
          res.writeHead(200, { 'content-type': 'text/plain' });
          streamBody(res, Infinity);
        });
        return;
      case 'redirect':
        res.writeHead(302, { location: REDIRECT_PATH });
        res.end();
        return;
    }
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    requests += 1;
    lastRequestAt = Date.now();
    checkContract(req, body);
    const traceId = traceIdOf(req.headers.traceparent);
    const key = eventsOf(body.toString('utf8')).map(({ messageId, user, text }): Received => {
      const received = { key: options.keyOf(messageId, traceId), user };
      arrived(received.key, text);
      return received;
    });
    eventsInFlight += key.length;
    res.once('close', () => (eventsInFlight -= key.length));
    if (Date.now() < outageUntil) {
      failuresServed.set('outage', (failuresServed.get('outage') ?? 0) + 1);
      res.writeHead(503);
      res.end();
      return;
    }
    const behaviour = spec.behaviour;
    switch (behaviour.kind) {
      case 'ok': {
        const delay = behaviour.maxDelayMs > 0 ? random.int(0, behaviour.maxDelayMs) : 0;
        if (delay === 0) answer200(req, res, key);
        else setTimeout(() => answer200(req, res, key), delay);
        return;
      }
      case 'failing':
        if (random.chance(behaviour.share)) fail(random.pick(FAILURES), req, res, key);
        else answer200(req, res, key);
        return;
      case 'unsteady': {
        const roll = random.next();
        if (roll < behaviour.share503) fail('status-503-retry-after', req, res, key);
        else if (roll < behaviour.share503 + behaviour.slowShare) fail('too-slow', req, res, key);
        else answer200(req, res, key);
        return;
      }
      case 'redirect':
        fail('redirect', req, res, key);
        return;
      case 'blackhole':
        fail('hang', req, res, key);
        return;
    }
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => onRequest(req, res, Buffer.concat(chunks)));
    req.on('error', () => undefined);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    name: spec.name,
    url: () => `http://127.0.0.1:${port}${HOOK_PATH}`,
    arrivals,
    firstDeliveries,
    problems,
    problemCount: () => problemCount,
    failuresServed,
    requests: () => requests,
    eventsInFlight: () => eventsInFlight,
    lastRequestAt: () => lastRequestAt,
    outageUntil(untilMs) {
      outageUntil = untilMs;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
