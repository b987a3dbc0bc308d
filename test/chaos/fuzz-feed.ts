// Feeds fuzzed inputs to the running service — records straight to `calls` and
// requests to the gateway — and tells the ledger what each must become: the harness's
// oracle reads every input the way docs/kafka.md, docs/configuration.md#routing, docs/webhooks.md and docs/http-api.md says the service must, so a valid one
// has known destinations and a known body, and one the harness cannot read as a call
// must end in `calls.invalid`.
import { expectedBodyWithPlaceholders } from './expected-body.js';
import type { FuzzCall, FuzzRequest } from './fuzz-inputs.js';
import type { Ledger } from './ledger.js';
import type { KafkaWriter, SendOutcome } from './load.js';
import { postToGateway } from './load.js';
import type { Random } from './random.js';
import { expectedDestinations, sourceOfRecord } from './topology.js';
import type { Topology } from './topology.js';

const CALL_TYPES = new Set(['identify', 'track', 'page', 'screen', 'group', 'alias']);
const utf8 = new TextDecoder('utf-8', { fatal: true });

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The input as the contract reads it: strict UTF-8, a BOM ignored, one JSON value. */
export function readJson(bytes: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    let text = utf8.decode(bytes);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

export interface OracleReading {
  /** Where it must arrive if the service finds it valid; undefined when it can only be invalid. */
  destinations: string[] | undefined;
  body: { text: string; knownMessageId: string | undefined } | undefined;
  /** Source and own messageId: copies the router drops share it (docs/kafka.md#copies-of-a-call). */
  copyGroup?: string;
}

/** The oracle for one call object from `source`. */
function readCall(topology: Topology, call: Record<string, unknown>, sourceId: string | undefined, writeKey: unknown): OracleReading {
  const source = sourceOfRecord(topology, sourceId, writeKey);
  if (source === undefined || !CALL_TYPES.has(call.type as string)) return { destinations: undefined, body: undefined };
  const messageId = typeof call.messageId === 'string' && call.messageId !== '' ? call.messageId : undefined;
  return {
    destinations: expectedDestinations(topology, source, call),
    body: { text: expectedBodyWithPlaceholders(call, messageId), knownMessageId: messageId },
    ...(messageId === undefined ? {} : { copyGroup: `${source.id}\u0000${messageId}` }),
  };
}

/** A record on `calls`: its source from the header, else its `writeKey`. */
export function readCallsRecord(topology: Topology, bytes: Buffer, headerSourceId: string | undefined): OracleReading {
  const parsed = readJson(bytes);
  if (!parsed.ok || !isPlainObject(parsed.value)) return { destinations: undefined, body: undefined };
  return readCall(topology, parsed.value, headerSourceId, parsed.value.writeKey);
}

/** An object merged under a call's own (docs/http-api.md): the call's keys win; its own non-object value is left as is. */
function mergedUnder(shared: unknown, own: unknown): unknown {
  if (!isPlainObject(shared)) return own;
  if (own === undefined || own === null) return shared;
  return isPlainObject(own) ? { ...shared, ...own } : own;
}

/** A gateway request (one call) from the fuzz source, as the gateway must store it. */
export function readGatewayRequest(topology: Topology, request: FuzzRequest): OracleReading {
  const parsed = readJson(request.body);
  if (!parsed.ok || !isPlainObject(parsed.value)) return { destinations: undefined, body: undefined };
  const body = parsed.value;
  let call: Record<string, unknown>;
  const routeType = /^\/v1\/(identify|track|page|screen|group|alias)$/.exec(request.path)?.[1];
  if (routeType !== undefined) {
    call = { ...body };
    if (call.type === undefined || call.type === null) call.type = routeType;
  } else {
    const batch = body.batch;
    if (!Array.isArray(batch) || batch.length !== 1 || !isPlainObject(batch[0])) return { destinations: undefined, body: undefined };
    call = { ...batch[0] };
    if (body.context !== undefined && body.context !== null) call.context = mergedUnder(body.context, call.context);
    if (body.integrations !== undefined && body.integrations !== null) call.integrations = mergedUnder(body.integrations, call.integrations);
  }
  // The gateway knows the source from the write key; a `writeKey` field is dropped.
  return readCall(topology, call, topology.fuzzSource.id, undefined);
}

export interface FuzzStats {
  kafkaInputs: number;
  gatewayInputs: number;
  unacknowledged: number;
  /** Gateway answers by status. */
  gatewayStatus: Map<number, number>;
  /** Answers the contract does not allow for these inputs (a 401, a 500...). */
  oddAnswers: string[];
}

export function emptyFuzzStats(): FuzzStats {
  return { kafkaInputs: 0, gatewayInputs: 0, unacknowledged: 0, gatewayStatus: new Map(), oddAnswers: [] };
}

/** Header variants of fuzzed records: mostly the fuzz source, sometimes none (the body's writeKey decides), unknown or empty. */
function headerSource(random: Random, topology: Topology): string | undefined {
  return random.weighted<string | undefined>([
    [topology.fuzzSource.id, 14],
    [undefined, 4],
    ['no-such-source', 1],
    ['', 1],
  ]);
}

/** Writes fuzzed calls to `calls` in one send. */
export async function feedKafka(inputs: readonly FuzzCall[], kafka: KafkaWriter, topology: Topology, ledger: Ledger, random: Random, stats: FuzzStats): Promise<void> {
  const records = inputs.map((input) => {
    const { traceparent, key } = ledger.nextTrace();
    const sourceId = headerSource(random, topology);
    const reading = readCallsRecord(topology, input.bytes, sourceId);
    ledger.addFuzz(key, reading.destinations, reading.body, reading.copyGroup);
    const headers: Record<string, string> = { traceparent };
    if (sourceId !== undefined) headers['source-id'] = sourceId;
    return { key, record: { key: random.chance(0.5) ? null : random.pick(['u-1', 'u-2', '']), value: input.bytes, headers } };
  });
  stats.kafkaInputs += records.length;
  const outcome = await kafka.write(records.map((r) => r.record));
  if (!outcome.acknowledged) {
    stats.unacknowledged += records.length;
    return;
  }
  for (const { key } of records) ledger.acknowledge(key, 'unknown');
}

/** Sends one fuzzed request to the gateway and records what its answer claims. */
export async function feedGateway(request: FuzzRequest, gatewayUrl: string, topology: Topology, ledger: Ledger, random: Random, stats: FuzzStats): Promise<void> {
  const { traceparent, key } = ledger.nextTrace();
  const reading = readGatewayRequest(topology, request);
  ledger.addFuzz(key, reading.destinations, reading.body, reading.copyGroup);
  stats.gatewayInputs += 1;
  const outcome: SendOutcome = await postToGateway(gatewayUrl, request.path, request.body, {
    writeKey: topology.fuzzSource.writeKey!,
    traceparent,
    gzip: random.chance(0.1),
  });
  if (!outcome.acknowledged || outcome.status === undefined) {
    stats.unacknowledged += 1;
    return;
  }
  stats.gatewayStatus.set(outcome.status, (stats.gatewayStatus.get(outcome.status) ?? 0) + 1);
  if (outcome.status === 200) {
    const invalid = outcome.answer?.invalid;
    ledger.acknowledge(key, Array.isArray(invalid) && invalid.length > 0 ? 'invalid' : 'valid');
  } else if (outcome.status === 400 || outcome.status === 413) {
    // The request was refused as a whole and kept whole in calls.invalid.
    ledger.acknowledge(key, 'invalid');
  } else if (stats.oddAnswers.length < 20) {
    stats.oddAnswers.push(`${request.path} ${outcome.status} ${JSON.stringify(outcome.answer).slice(0, 200)} (${request.recipe})`);
  }
}
