// A real local webhook receiver (HTTP on port 0) that records every request
// and answers as the test scripts it.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  text: string;
  at: number;
}

/** What to answer: a status (and headers), or 'hang' to never answer, or a custom handler. */
export type Reply =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  | 'hang'
  | ((req: IncomingMessage, res: ServerResponse, body: Buffer) => void);

export interface Receiver {
  url(path?: string): string;
  requests: ReceivedRequest[];
  /** Answers every following request this way (by default 200). */
  reply(next: Reply): void;
  /** Picks the answer per request (index counts every request this receiver got). */
  replyWith(pick: (request: ReceivedRequest, index: number) => Reply): void;
  close(): Promise<void>;
}

/** Whether the receiver got no new request for `quietMs` (a negative check needs some wait). */
export async function staysQuiet(receiver: Receiver, quietMs: number): Promise<boolean> {
  const before = receiver.requests.length;
  const deadline = Date.now() + quietMs;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (receiver.requests.length !== before) return false;
  }
  return true;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  let replyFor: (request: ReceivedRequest, index: number) => Reply = () => ({ status: 200 });
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        text: body.toString('utf8'),
        at: Date.now(),
      };
      const index = requests.push(request) - 1;
      const reply = replyFor(request, index);
      if (reply === 'hang') {
        hanging.add(res);
        return;
      }
      if (typeof reply === 'function') {
        reply(req, res, body);
        return;
      }
      const answer = () => {
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    requests,
    reply(next) {
      replyFor = () => next;
    },
    replyWith(pick) {
      replyFor = pick;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A webhook URL as dead letters and logs print it: its index in the destination and its
 * origin, without user info, path or query (docs/webhooks.md#reading-dead-letters).
 */
export function printedUrl(url: string, index = 0): string {
  return `webhooks[${index}] ${new URL(url).origin}`;
}
