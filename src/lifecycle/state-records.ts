// The records of `destinations.state` (docs/kafka.md#destination-state) and the names of
// the lifecycle's topics and groups. One partition, compacted:
// - `transition/<destination>/<time>-<random>`: a TransitionRequest (lifecycle-state.ts).
//   Each has a key of its own, so compaction keeps every one and a process that reads the
//   topic from its start folds the same history as one that followed it live.
// - `report/<destination>/<instance>`: a pod's latest AttemptReport (auto-disable.ts);
//   compaction keeps the latest of each pod.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/schema.js';
import type { OutboundRecord } from '../kafka/index.js';
import { parseAttemptReport } from './auto-disable.js';
import type { AttemptReport } from './auto-disable.js';
import { parseTransitionRequest } from './lifecycle-state.js';
import type { TransitionRequest } from './lifecycle-state.js';
import { groupPrefixOf } from '../runtime/group-ids.js';

/** `<prefix>destinations.state`: every destination's lifecycle, read by every process. */
export function stateTopic(config: Pick<Config, 'kafka'>): string {
  return `${config.kafka.topicPrefix}destinations.state`;
}

/** `<prefix>operations`: the operational events, JSON (docs/operations.md#operational-events). */
export function operationsTopic(config: Pick<Config, 'kafka'>): string {
  return `${config.kafka.topicPrefix}operations`;
}

/**
 * The deliverers' group on `destinations.state` that writes the operational events:
 * `<groupPrefix>operations`. Its one partition belongs to one member at a time, so one pod
 * writes each event (docs/operations.md#operational-events).
 */
export function operationsGroupId(config: Pick<Config, 'kafka'>): string {
  return `${groupPrefixOf(config)}operations`;
}

/** Each process follows `destinations.state` from its start in a group of its own, never committed: `<groupPrefix>destinations-state.<random>`. */
export function stateFollowerGroupId(config: Pick<Config, 'kafka'>): string {
  return `${groupPrefixOf(config)}destinations-state.${randomBytes(6).toString('hex')}`;
}

/**
 * One life of one lifecycle service, as reports name it: host, process id and a random
 * part. NOTE: host and process id alone named two lives alike (a container restarted
 * as pid 1 on the same host, or two pods in one process), and the second life's report
 * of a minute then replaced the first's in the compacted topic: its dead letters were in
 * no `message.dead_lettered` event.
 */
export function instanceName(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}

/** One pod's dead letters of one destination and minute so far (observability/dead-letter-tap.ts). */
export interface DeadLetterReport {
  destination: string;
  minute: number;
  instance: string;
  count: number;
  sample: string[];
}

export type StateRecord =
  | { kind: 'transition'; key: string; request: TransitionRequest }
  | { kind: 'report'; key: string; report: AttemptReport }
  | { kind: 'dead-letters'; key: string; report: DeadLetterReport }
  | { kind: 'tombstone'; key: string };

export function transitionRecord(request: TransitionRequest): { key: string; record: OutboundRecord } {
  const key = `transition/${request.destination}/${request.at}-${randomBytes(4).toString('hex')}`;
  return { key, record: { key, value: JSON.stringify(request), partition: 0 } };
}

export function reportRecord(report: AttemptReport): OutboundRecord {
  return { key: `report/${report.destination}/${report.instance}`, value: JSON.stringify(report), partition: 0 };
}

export function deadLetterReportKey(report: Pick<DeadLetterReport, 'destination' | 'minute' | 'instance'>): string {
  return `deadletters/${report.destination}/${report.minute}/${report.instance}`;
}

export function deadLetterReportRecord(report: DeadLetterReport): OutboundRecord {
  return { key: deadLetterReportKey(report), value: JSON.stringify(report), partition: 0 };
}

/** Removes a pod's dead-letter report once its minute was summed up (so that the compacted topic does not keep it). */
export function tombstoneRecord(key: string): OutboundRecord {
  return { key, value: null, partition: 0 };
}

function parseDeadLetterReport(value: unknown): DeadLetterReport | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.destination !== 'string' || typeof r.instance !== 'string' || typeof r.minute !== 'number' || typeof r.count !== 'number' || !Array.isArray(r.sample)) return undefined;
  return { destination: r.destination, instance: r.instance, minute: r.minute, count: r.count, sample: r.sample.filter((id): id is string => typeof id === 'string') };
}

/** What a record of the topic holds; undefined for one that is not Switchyard's (it is skipped). */
export function readStateRecord(key: Buffer | null, value: Buffer | null): StateRecord | undefined {
  if (key === null) return undefined;
  const name = key.toString('utf8');
  if (value === null) return { kind: 'tombstone', key: name };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
  if (name.startsWith('transition/')) {
    const request = parseTransitionRequest(parsed);
    return request === undefined ? undefined : { kind: 'transition', key: name, request };
  }
  if (name.startsWith('deadletters/')) {
    const report = parseDeadLetterReport(parsed);
    return report === undefined ? undefined : { kind: 'dead-letters', key: name, report };
  }
  if (name.startsWith('report/')) {
    const report = parseAttemptReport(parsed);
    return report === undefined ? undefined : { kind: 'report', key: name, report };
  }
  return undefined;
}
