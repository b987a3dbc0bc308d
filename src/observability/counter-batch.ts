// Counter increments kept as plain numbers and added to their prom-client counters when
// the counters are read: prom-client calls a metric's collect() before every scrape (and
// every get()), and the counters that use a batch flush it there.
//
// NOTE: prom-client hashes the label values on every inc(), even through a child bound
// with labels() (time and garbage each: docs/benchmarks.md#figures-behind-the-code), and the deliverer counts twice
// per event (the attempt's outcome and the event's result). Added once per turn of the
// event loop, that still cost one inc per event at 1,000 destinations (their events
// rarely share a turn); added at the scrape, it costs one inc per series per scrape.
// A read never misses a count made before it.

/** What a prom-client counter child (`counter.labels(...)`) offers. */
export interface Incrementable {
  inc(value?: number): void;
}

export class CounterBatch {
  private readonly pending = new Map<Incrementable, number>();

  /** Counts `n` on `counter`, added at the next flush (the counter's next read). */
  add(counter: Incrementable, n = 1): void {
    this.pending.set(counter, (this.pending.get(counter) ?? 0) + n);
  }

  /** Adds what is pending now; safe to call any time. */
  readonly flush = (): void => {
    for (const [counter, n] of this.pending) counter.inc(n);
    this.pending.clear();
  };
}

/** Joins the label values of a LabeledCounts key; no label value the daemon counts holds it (NUL). */
export const LABEL_SEPARATOR = '\u0000';

/** What LabeledCounts adds to: a prom-client counter with those labels. */
interface LabeledCounter<L extends string> {
  inc(labels: Partial<Record<L, string>>, value?: number): void;
}

/**
 * Counts of one counter by its label values (a key: the values in `labelNames` order,
 * joined by LABEL_SEPARATOR), kept as numbers and added to the counter when it is read:
 * one inc per series and read, not per series and send.
 * NOTE: the router counted once per label set at each send; with its events spread over
 * 1,000 destinations that was an inc per destination per send, and most of the router's
 * metric cost (route bench, router-wide side: docs/benchmarks.md#figures-behind-the-code).
 */
export class LabeledCounts<L extends string> {
  private readonly pending = new Map<string, number>();

  constructor(private readonly labelNames: readonly L[]) {}

  /** Counts `n` for each key of `counts`, added at the counter's next read. */
  addAll(counts: ReadonlyMap<string, number>): void {
    for (const [key, n] of counts) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
  }

  /** Adds what is pending to `counter` (its `collect`, before every read). */
  flushInto(counter: LabeledCounter<L>): void {
    for (const [key, n] of this.pending) {
      const values = key.split(LABEL_SEPARATOR);
      const labels: Partial<Record<L, string>> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i] ?? ''));
      counter.inc(labels, n);
    }
    this.pending.clear();
  }
}
