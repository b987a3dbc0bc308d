// A transport that records every batch and answers as the test scripts it, for
// exercising the queue without a socket.
import type { BatchLimits, QueuedCall, SendResult, Transport } from '../src/index.js';
import { HTTP_BATCH_LIMITS } from '../src/http-transport.js';

export interface SentBatch {
  calls: QueuedCall[];
  /** The call objects as sent (parsed back from their JSON). */
  messages: Record<string, unknown>[];
  at: number;
}

export interface FakeTransport extends Transport {
  sent: SentBatch[];
  closed: number;
  /** Answers the next sends with these results, in order; then success. */
  answer(...results: SendResult[]): void;
  /** Makes sends wait until release() is called. */
  hold(): void;
  release(): void;
}

/** By default the HTTP transport's limits, so that splitting is tested against the real numbers. */
export function fakeTransport(limits: BatchLimits = HTTP_BATCH_LIMITS): FakeTransport {
  const scripted: SendResult[] = [];
  let held: Promise<void> | undefined;
  let releaseHeld: () => void = () => undefined;
  const transport: FakeTransport = {
    description: 'fake transport',
    limits,
    sent: [],
    closed: 0,
    async send(batch) {
      transport.sent.push({
        calls: [...batch],
        messages: batch.map((call) => JSON.parse(call.json) as Record<string, unknown>),
        at: Date.now(),
      });
      if (held !== undefined) await held;
      return scripted.shift() ?? { kind: 'success' };
    },
    async close() {
      transport.closed += 1;
    },
    answer(...results) {
      scripted.push(...results);
    },
    hold() {
      held = new Promise<void>((resolve) => {
        releaseHeld = resolve;
      });
    },
    release() {
      held = undefined;
      releaseHeld();
    },
  };
  return transport;
}
