// What the HTTP sender keeps of a receiver's answer body (http-sender.ts, docs/webhooks.md#attempt-history):
// the first 512 bytes of an answer that did not deliver, escaped, never a header; nothing
// of a 2xx. A real receiver on 127.0.0.1; no broker needed.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpSender, webhookTarget } from '../../src/delivery/http-sender.js';
import type { HttpSender } from '../../src/delivery/http-sender.js';

let server: Server;
let base: string;
let sender: HttpSender;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '';
      if (path === '/boom') res.writeHead(500, { 'x-secret-header': 'never-kept' }).end('boom: database down');
      else if (path === '/empty') res.writeHead(503).end();
      else if (path === '/long') res.writeHead(502, { 'content-type': 'text/html' }).end(`<html>${'x'.repeat(100_000)}</html>`);
      else if (path === '/escape') res.writeHead(400).end('bad\r\n\u001b[31mred\u001b[0m');
      else if (path === '/gzip') res.writeHead(500, { 'content-encoding': 'gzip' }).end(gzipSync('compressed'));
      else res.writeHead(200).end('fine, thanks');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sender = createHttpSender({ timeoutMs: 5_000, maxResponseBodyBytes: 64 * 1024 });
});

afterAll(async () => {
  await sender?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

const post = (path: string) => sender.send(webhookTarget(`${base}${path}`), Buffer.from('{}'), { 'content-type': 'application/json' });

describe('the start of an answer body', () => {
  it('is kept for an answer that did not deliver, without its headers', async () => {
    const result = await post('/boom');
    expect(result).toMatchObject({ outcome: '5xx', status: 500, reason: '500 Internal Server Error', response: 'boom: database down' });
    expect(JSON.stringify(result)).not.toContain('never-kept');
  });

  it('is absent for an empty body and for a 2xx', async () => {
    expect(await post('/empty')).not.toHaveProperty('response');
    expect(await post('/ok')).not.toHaveProperty('response');
  });

  it('is cut at 512 bytes, even past the size cap where the connection is dropped', async () => {
    const result = await post('/long');
    expect(result).toMatchObject({ status: 502, response: `<html>${'x'.repeat(506)}` });
  });

  it('has its control characters escaped, and a compressed body only named', async () => {
    expect(await post('/escape')).toMatchObject({ status: 400, response: 'bad\\r\\n\\u001b[31mred\\u001b[0m' });
    expect(await post('/gzip')).toMatchObject({ status: 500, response: '(a body in gzip encoding, not shown)' });
  });
});
