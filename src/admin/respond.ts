import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Writes a whole answer: JSON for an object, text for a string (the Prometheus exposition).
 * NOTE: a refusal (4xx, 5xx) closes its connection (docs/operations.md#threat-model): a
 * client that was refused holds no slot afterwards, and an unread body is not waited for.
 */
export function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    ...(status >= 400 ? { connection: 'close' } : {}),
    ...headers,
  });
  res.end(text);
}

/** The request's body, or undefined once it passes `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
