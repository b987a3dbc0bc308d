// What the console's violations view shows (docs/tracking-plans.md#the-console-view): the
// records of `violations` read over a window, counted per source and event by violation
// type, with the most recent calls as examples. Pure.
import type { ViolationGroup, ViolationRecordValue, ViolationsSummary } from './violation-types.js';

export type { ViolationGroup, ViolationRecordValue, ViolationsSummary } from './violation-types.js';

/** A record's value read as a violations record; undefined when it is not one. */
export function readViolationRecord(value: Buffer | string | null): ViolationRecordValue | undefined {
  if (value === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const r = parsed as Record<string, unknown>;
  const text = (name: string) => typeof r[name] === 'string';
  if (!text('messageId') || !text('source') || !text('event') || !text('receivedAt') || !Array.isArray(r.violations)) return undefined;
  return parsed as ViolationRecordValue;
}

/** Counts `records` (in the order read, oldest first per partition), keeping the `recentCount` newest by receipt time. */
export function summarizeViolations(values: readonly (Buffer | string | null)[], recentCount: number): ViolationsSummary {
  const groups = new Map<string, ViolationGroup>();
  const readable: ViolationRecordValue[] = [];
  let unreadable = 0;
  for (const value of values) {
    const record = readViolationRecord(value);
    if (record === undefined) {
      unreadable += 1;
      continue;
    }
    readable.push(record);
    const key = `${record.source}\u0000${record.event}`;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = { source: record.source, event: record.event, calls: 0, byType: {}, byAction: {} }));
    group.calls += 1;
    group.byAction[record.action] = (group.byAction[record.action] ?? 0) + 1;
    for (const violation of record.violations) group.byType[violation.type] = (group.byType[violation.type] ?? 0) + 1;
  }
  const recent = readable.sort((a, b) => (a.receivedAt < b.receivedAt ? 1 : a.receivedAt > b.receivedAt ? -1 : 0)).slice(0, recentCount);
  const ordered = [...groups.values()].sort((a, b) => b.calls - a.calls || a.source.localeCompare(b.source) || a.event.localeCompare(b.event));
  return { read: values.length, unreadable, groups: ordered, recent };
}
