// One event to every URL of its destination at once (docs/webhooks.md#delivery-and-retries): the first 2xx
// anywhere makes it delivered.
import { answerText } from './attempt-history.js';
import { stopOnStatus } from './classify.js';
import type { HttpSender, SendResult, WebhookTarget } from './http-sender.js';

export interface FanOutTarget {
  target: WebhookTarget;
  /** Content-Type, User-Agent, the entry's static headers: the same for every event. */
  headers: Record<string, string>;
}

/** One finished request (a cancelled one has no result). */
export interface UrlResult {
  index: number;
  result: SendResult;
}

/**
 * Which targets get a request, as bit masks (bit i: target i). `send`: the ones whose
 * circuit lets a request through; `keep`: requests another URL's 2xx must not cancel
 * (the circuit breaker's probes and watched requests, circuit-breaker.ts).
 */
export interface FanOutSelection {
  send: number;
  keep: number;
}

/**
 * Sends `body` to every selected target (all when `selection` is left out) at once and
 * resolves when one answered 2xx or all finished. NOTE: on the first 2xx the requests
 * still running are aborted, not left to finish: the event is delivered, and a hanging
 * URL would otherwise hold a connection and a concurrency permit until its timeout for
 * nothing. The aborted ones come back as `cancelled` and are not counted as attempts:
 * their outcome is unknown. Requests in `selection.keep` run to their answer.
 */
export async function fanOut(
  sender: Pick<HttpSender, 'send'>,
  targets: readonly FanOutTarget[],
  body: Buffer,
  perEvent: Record<string, string>,
  selection?: FanOutSelection,
): Promise<UrlResult[]> {
  // One request (one URL, or every other URL's circuit open): nothing to cancel.
  const single = selection === undefined ? (targets.length === 1 ? 0 : -1) : onlyBit(selection.send);
  const only = targets[single];
  if (only !== undefined) return [{ index: single, result: await sender.send(only.target, body, { ...only.headers, ...perEvent }) }];
  const cancel = new AbortController();
  const results: UrlResult[] = [];
  const running: Promise<void>[] = [];
  targets.forEach((t, index) => {
    const bit = 1 << index;
    if (selection !== undefined && (selection.send & bit) === 0) return;
    const signal = selection !== undefined && (selection.keep & bit) !== 0 ? undefined : cancel.signal;
    running.push(
      sender.send(t.target, body, { ...t.headers, ...perEvent }, signal).then((result) => {
        results.push({ index, result });
        if (result.outcome === '2xx') cancel.abort();
      }),
    );
  });
  await Promise.all(running);
  return results;
}

/** The index of the one bit set in `mask`; -1 when none or several are. */
function onlyBit(mask: number): number {
  return mask !== 0 && (mask & (mask - 1)) === 0 ? 31 - Math.clz32(mask) : -1;
}

export interface EventSummary {
  delivered: boolean;
  /**
   * Some URL failed in a way a later attempt may cure (a 5xx, 408, 429, a timeout: the
   * `retryable` verdict of classify.ts), so the event goes to a retry tier rather than
   * the dead letters. Not a Kafka error's retriability (src/kafka/commit.ts `isRetriable`).
   */
  worthRetrying: boolean;
  /** The longest Retry-After among retryable answers. */
  retryAfterMs?: number;
  /** Failed URLs (by target index) and why (the status, then the start of the answer's body), in target order. */
  failures: { index: number; reason: string }[];
}

const NO_STATUSES: ReadonlySet<number> = new Set();

/**
 * What the requests of one event came to. Pure. `stopOn`: the destination's statuses
 * that are permanent at once (classify.ts `stopOnStatus`).
 */
export function summarize(results: readonly UrlResult[], stopOn: ReadonlySet<number> = NO_STATUSES): EventSummary {
  let delivered = false;
  let worthRetrying = false;
  let retryAfterMs: number | undefined;
  const failures: { index: number; reason: string }[] = [];
  for (const { index, result: answered } of results) {
    if (answered.outcome === 'cancelled') continue;
    const result = stopOnStatus(answered, stopOn);
    if (result.verdict === 'delivered') {
      delivered = true;
      continue;
    }
    if (result.verdict === 'retryable') {
      worthRetrying = true;
      if (result.retryAfterMs !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, result.retryAfterMs);
    }
    failures.push({ index, reason: answerText(result) });
  }
  failures.sort((a, b) => a.index - b.index);
  const summary: EventSummary = { delivered, worthRetrying, failures };
  if (retryAfterMs !== undefined) summary.retryAfterMs = retryAfterMs;
  return summary;
}
