// Counter increments kept as plain numbers and added to their prom-client counters when
// the counters are read: prom-client calls a metric's collect() before every scrape (and
// every get()), and the counters that use a batch flush it there.
//
// NOTE: prom-client hashes the label values on every inc(), even through a child bound
// with labels() (time and garbage each: docs/architecture.md#measured-figures-behind-the-code), and the deliverer counts twice
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
