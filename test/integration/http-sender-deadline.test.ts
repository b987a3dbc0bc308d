// delivery.timeout when the deliverer's own event loop falls behind (http-sender.ts,
// Attempt.expire): an answer that reached the socket before the deadline counts, even
// when the loop gets to it only after the deadline's timer is due; an answer that came
// after the deadline still does not. The receiver runs in a worker thread, so it
// answers while this thread is blocked. No broker needed.
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpSender, webhookTarget } from '../../src/delivery/http-sender.js';
import type { HttpSender } from '../../src/delivery/http-sender.js';

// The receiver: tells the test when a request arrived, answers 200 after `?delay=` ms.
const RECEIVER = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const server = createServer((req, res) => {
  parentPort.postMessage({ arrived: req.url });
  const delay = Number(new URL(req.url, 'http://x').searchParams.get('delay') ?? 0);
  req.resume();
  req.on('end', () => setTimeout(() => res.writeHead(200).end('ok'), delay));
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
`;

const TIMEOUT_MS = 300;

let worker: Worker;
let port: number;
let sender: HttpSender;

beforeAll(async () => {
  worker = new Worker(RECEIVER, { eval: true });
  port = await new Promise<number>((resolve) => {
    const onMessage = (message: { port?: number }) => {
      if (message.port === undefined) return;
      worker.off('message', onMessage);
      resolve(message.port);
    };
    worker.on('message', onMessage);
  });
  sender = createHttpSender({ timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  await sender?.close();
  await worker?.terminate();
});

/** Blocks this thread (timers, sockets, everything) for `ms`, as a long burst of work would. */
function blockLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Sends to the receiver; once the request arrived there, blocks this thread for `blockMs`. */
async function sendThenBlock(delayMs: number, blockMs: number) {
  const path = `/hook?delay=${delayMs}&n=${Math.random()}`;
  const arrived = new Promise<void>((resolve) => {
    const onMessage = (message: { arrived?: string }) => {
      if (message.arrived !== path) return;
      worker.off('message', onMessage);
      resolve();
    };
    worker.on('message', onMessage);
  });
  const result = sender.send(webhookTarget(`http://127.0.0.1:${port}${path}`), Buffer.from('{}'), { 'content-type': 'application/json' });
  await arrived;
  blockLoop(blockMs);
  return result;
}

describe('the delivery timeout on a loop that fell behind', () => {
  it('an answer that arrived before the deadline counts, though the loop reads it after the deadline', async () => {
    // Answered 20 ms in; this thread looks again only at 3x the timeout.
    const result = await sendThenBlock(20, 3 * TIMEOUT_MS);
    expect(result).toMatchObject({ outcome: '2xx', verdict: 'delivered', status: 200 });
  });

  it('a request the stalled loop had not even sent by the deadline gets the time of the stall: a prompt answer counts', async () => {
    const path = `/hook?delay=0&n=${Math.random()}`;
    const result = sender.send(webhookTarget(`http://127.0.0.1:${port}${path}`), Buffer.from('{}'), { 'content-type': 'application/json' });
    // Blocked before the request reached the socket, until twice the timeout.
    blockLoop(2 * TIMEOUT_MS);
    expect(await result).toMatchObject({ outcome: '2xx', verdict: 'delivered', status: 200 });
  });

  it('an answer that arrives after the deadline is still a timeout', async () => {
    const result = await sendThenBlock(3 * TIMEOUT_MS, 0);
    expect(result).toMatchObject({ outcome: 'timeout', verdict: 'retryable' });
    expect('reason' in result && result.reason).toMatch(/no complete answer within/);
  });

  it('an answer after the deadline is a timeout even when the loop was blocked past the deadline meanwhile', async () => {
    // Blocked until 2x the timeout; the answer comes only at 4x.
    const result = await sendThenBlock(4 * TIMEOUT_MS, 2 * TIMEOUT_MS);
    expect(result).toMatchObject({ outcome: 'timeout', verdict: 'retryable' });
  });
});
