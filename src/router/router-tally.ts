// Metric counts gathered while a send is assembled and added to the docs/metrics.md
// counters once that send is acknowledged: one `inc` per label set and send, not per
// call (prom-client hashes the labels on every `inc`).
import type { Metrics } from '../observability/metrics.js';
import type { FilterReason } from './routing-rules.js';

const SEP = '\u0000';

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

export class RouterTally {
  private readonly received = new Map<string, number>();
  private readonly routed = new Map<string, number>();
  private readonly filtered = new Map<string, number>();
  private readonly invalid = new Map<string, number>();

  callReceived(source: string, type: string): void {
    bump(this.received, source + SEP + type);
  }

  eventRouted(source: string, destination: string): void {
    bump(this.routed, source + SEP + destination);
  }

  eventFiltered(source: string, destination: string, reason: FilterReason): void {
    bump(this.filtered, source + SEP + destination + SEP + reason);
  }

  recordInvalid(reason: string): void {
    bump(this.invalid, reason);
  }

  /** Adds the counts to the metrics and starts over. */
  applyTo(metrics: Metrics): void {
    for (const [key, n] of this.received) {
      const [source = '', type = ''] = key.split(SEP);
      metrics.callsReceived.inc({ source, type }, n);
    }
    for (const [key, n] of this.routed) {
      const [source = '', destination = ''] = key.split(SEP);
      metrics.eventsRouted.inc({ source, destination }, n);
    }
    for (const [key, n] of this.filtered) {
      const [source = '', destination = '', reason = ''] = key.split(SEP);
      metrics.eventsFiltered.inc({ source, destination, reason }, n);
    }
    for (const [reason, n] of this.invalid) metrics.callsInvalid.inc({ reason }, n);
    this.clear();
  }

  clear(): void {
    this.received.clear();
    this.routed.clear();
    this.filtered.clear();
    this.invalid.clear();
  }
}
