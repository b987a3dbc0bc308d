// Metric counts gathered while a send is assembled and handed to the docs/metrics.md
// counters once that send is acknowledged; they add them when read (LabeledCounts:
// prom-client hashes the labels on every `inc`).
import { LABEL_SEPARATOR as SEP } from '../observability/counter-batch.js';
import type { Metrics } from '../observability/metrics.js';
import type { FilterReason } from './routing-rules.js';

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

export class RouterTally {
  private readonly received = new Map<string, number>();
  private readonly routed = new Map<string, number>();
  private readonly filtered = new Map<string, number>();
  private readonly invalid = new Map<string, number>();
  private readonly violations = new Map<string, number>();
  private readonly deduplicated = new Map<string, number>();

  callReceived(source: string, type: string): void {
    bump(this.received, source + SEP + type);
  }

  eventRouted(source: string, destination: string): void {
    bump(this.routed, source + SEP + destination);
  }

  eventFiltered(source: string, destination: string, reason: FilterReason): void {
    bump(this.filtered, source + SEP + destination + SEP + reason);
  }

  /** A copy of a call routed within the dedupe window: dropped, counted here only. */
  callDeduplicated(source: string): void {
    bump(this.deduplicated, source);
  }

  recordInvalid(reason: string): void {
    bump(this.invalid, reason);
  }

  violation(source: string, event: string, type: string): void {
    bump(this.violations, source + SEP + event + SEP + type);
  }

  /** Hands the counts to the metrics (added to the counters at their next read) and starts over. */
  applyTo(metrics: Metrics): void {
    const counts = metrics.routerCounts;
    counts.received.addAll(this.received);
    counts.routed.addAll(this.routed);
    counts.filtered.addAll(this.filtered);
    counts.invalid.addAll(this.invalid);
    counts.violations.addAll(this.violations);
    counts.deduplicated.addAll(this.deduplicated);
    this.clear();
  }

  clear(): void {
    this.received.clear();
    this.routed.clear();
    this.filtered.clear();
    this.invalid.clear();
    this.violations.clear();
    this.deduplicated.clear();
  }
}
