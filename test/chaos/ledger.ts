// What the harness sent and what it therefore expects, by the key each call is known by
// at the receivers: load calls by messageId (`ld-<run>-<n>`), fuzzed inputs and deletion
// requests by the trace id of their traceparent (a fuzzed messageId may be anything or
// missing; a delete body has none).
import { normalizeReceivedBody } from './expected-body.js';
import type { Expectation } from './verdict.js';

/** Bodies larger than this are not kept for the comparison (it bounds the harness's memory). */
const MAX_KEPT_BODY_CHARS = 8 * 1024;

interface Entry {
  expectation: Expectation;
  /** The expected body: exact (load) or with placeholders (fuzz), or undefined when not checked. */
  body: string | undefined;
  /** For fuzz bodies: the messageId the body must carry, when the input had one. */
  knownMessageId: string | undefined;
  placeholders: boolean;
}

export class Ledger {
  private readonly entries = new Map<string, Entry>();
  readonly loadPrefix: string;
  /** Trace ids of fuzzed inputs start with this. */
  readonly tracePrefix: string;
  private fuzzCount = 0;
  bodiesNotChecked = 0;

  constructor(runTag: string) {
    this.loadPrefix = `ld-${runTag}-`;
    this.tracePrefix = runTag.padEnd(8, '0').slice(0, 8);
  }

  /** The key of a call seen at a receiver or in a topic. */
  keyOf(messageId: string | undefined, traceId: string | undefined): string {
    if (messageId?.startsWith(this.loadPrefix)) return messageId;
    if (traceId?.startsWith(this.tracePrefix)) return `trace:${traceId}`;
    return `stray:${messageId ?? traceId ?? 'no id'}`;
  }

  loadMessageId(n: number): string {
    return `${this.loadPrefix}${n}`;
  }

  /** A fresh traceparent for a fuzzed input, and its key. */
  nextTrace(): { traceparent: string; key: string } {
    const traceId = `${this.tracePrefix}${(this.fuzzCount++).toString(16).padStart(24, '0')}`;
    return { traceparent: `00-${traceId}-${'0'.repeat(15)}1-01`, key: `trace:${traceId}` };
  }

  addLoad(messageId: string, destinations: readonly string[], body: string): void {
    this.entries.set(messageId, {
      expectation: { key: messageId, origin: 'load', acknowledged: false, claim: 'valid', destinations },
      body,
      knownMessageId: messageId,
      placeholders: false,
    });
  }

  /** A deletion request, known by its trace id, with the exact delete body its destinations must get. */
  addDeletion(key: string, destinations: readonly string[], body: string): void {
    this.entries.set(key, {
      expectation: { key, origin: 'deletion', acknowledged: false, claim: 'valid', destinations },
      body,
      knownMessageId: undefined,
      placeholders: false,
    });
  }

  addFuzz(key: string, destinations: readonly string[] | undefined, body: { text: string; knownMessageId: string | undefined } | undefined, copyGroup?: string): void {
    let kept = body;
    if (kept !== undefined && kept.text.length > MAX_KEPT_BODY_CHARS) {
      kept = undefined;
      this.bodiesNotChecked += 1;
    }
    this.entries.set(key, {
      expectation: { key, origin: 'fuzz', acknowledged: false, claim: 'unknown', destinations, ...(copyGroup === undefined ? {} : { copyGroup }) },
      body: kept?.text,
      knownMessageId: kept?.knownMessageId,
      placeholders: true,
    });
  }

  /** What the service answered: `valid`/`invalid` from the gateway, `unknown` for a Kafka write. */
  acknowledge(key: string, claim: Expectation['claim']): void {
    const entry = this.entries.get(key);
    if (entry === undefined) throw new Error(`ledger: nothing was sent as ${key}`);
    entry.expectation.acknowledged = true;
    entry.expectation.claim = claim;
  }

  expectations(): Iterable<Expectation> {
    const entries = this.entries.values();
    return (function* () {
      for (const entry of entries) yield entry.expectation;
    })();
  }

  /** For receivers: the difference between a received body and the expected one, if any. */
  checkBody(key: string, text: string): string | undefined {
    const entry = this.entries.get(key);
    if (entry?.body === undefined) return undefined;
    if (!entry.placeholders) {
      return text === entry.body ? undefined : `expected ${entry.body.slice(0, 300)} got ${text.slice(0, 300)}`;
    }
    const normalized = normalizeReceivedBody(text, entry.knownMessageId);
    if (!normalized.ok) return normalized.problem;
    return normalized.text === entry.body ? undefined : `expected ${entry.body.slice(0, 300)} got ${normalized.text.slice(0, 300)}`;
  }
}
