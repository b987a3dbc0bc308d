import { describe, expect, it } from 'vitest';
import { destinationState } from '../../../src/trace/destination-state.js';
import type { DeliveryStage, RoutingVerdict, TraceDestination } from '../../../src/trace/destination-state.js';

const T0 = Date.UTC(2026, 4, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();
const ROUTED: RoutingVerdict = { routed: true };
const ERROR_503 = 'https://hooks.example.com/in: 503 Service Unavailable';
const ERROR_400 = 'https://hooks.example.com/in: 400 Bad Request';

/** The router's record (stamped with the receipt time), its retries and dead letters, a replay's record. */
const routerRecord = (finished: boolean, offset = 10n): DeliveryStage => ({ where: 'delivery', timestampMs: T0, offset, attemptsMade: 0, finished });
const retry = (attemptsMade: number, atMs: number, finished: boolean, extra: Partial<DeliveryStage> = {}): DeliveryStage => ({
  where: 'retry',
  timestampMs: atMs,
  offset: BigInt(attemptsMade),
  attemptsMade,
  finished,
  dueAtMs: atMs + 60_000,
  error: ERROR_503,
  ...extra,
});
const deadLetter = (attemptsMade: number, atMs: number, error = ERROR_400): DeliveryStage => ({
  where: 'dead_letter',
  timestampMs: atMs,
  offset: 3n,
  attemptsMade,
  finished: false,
  error,
  deadLetteredAtMs: atMs - 5,
});
const replayRecord = (atMs: number, finished: boolean): DeliveryStage => ({ where: 'delivery', timestampMs: atMs, offset: 40n, attemptsMade: 0, finished });

const cases: [string, RoutingVerdict, DeliveryStage[], Omit<TraceDestination, 'id'>][] = [
  ['routed, no record yet: pending', ROUTED, [], { state: 'pending' }],
  ['filtered by the current config, no record', { routed: false, reason: 'integrations' }, [], { state: 'filtered', reason: 'integrations' }],
  ['a reason the router adds later flows through as named', { routed: false, reason: 'destination_filter' }, [], { state: 'filtered', reason: 'destination_filter' }],
  [
    'a shaping expression failed on it: filtered, transform_error, with what failed',
    { routed: false, reason: 'transform_error', error: 'transform: $error: no' },
    [],
    { state: 'filtered', reason: 'transform_error', lastError: 'transform: $error: no' },
  ],
  ['routed, not finished: pending', ROUTED, [routerRecord(false)], { state: 'pending' }],
  ['routed and finished, nothing after it: delivered on the first attempt', ROUTED, [routerRecord(true)], { state: 'delivered', attempts: 1 }],
  [
    'moved to a tier, not due yet: retrying with the attempts, the error and the due time',
    ROUTED,
    [routerRecord(true), retry(1, T0 + 1_000, false)],
    { state: 'retrying', attempts: 1, lastError: ERROR_503, nextAttemptAt: iso(T0 + 61_000) },
  ],
  [
    'two tiers on: the newest tier counts',
    ROUTED,
    [retry(2, T0 + 5_000, false), routerRecord(true), retry(1, T0 + 1_000, true)],
    { state: 'retrying', attempts: 2, lastError: ERROR_503, nextAttemptAt: iso(T0 + 65_000) },
  ],
  ['a retry without an error header (an older version wrote it)', ROUTED, [routerRecord(true), retry(1, T0 + 1_000, false, { error: undefined })], { state: 'retrying', attempts: 1, nextAttemptAt: iso(T0 + 61_000) }],
  ['a retry delivered: delivered on the attempt after the ones it counted', ROUTED, [routerRecord(true), retry(1, T0 + 1_000, true), retry(2, T0 + 5_000, true)], { state: 'delivered', attempts: 3 }],
  [
    'dead-lettered after its retries',
    ROUTED,
    [routerRecord(true), retry(1, T0 + 1_000, true), deadLetter(2, T0 + 9_000)],
    { state: 'dead_lettered', attempts: 2, lastError: ERROR_400, deadLetteredAt: iso(T0 + 8_995) },
  ],
  ['dead-lettered, then replayed and not yet attempted: pending', ROUTED, [routerRecord(true), deadLetter(1, T0 + 1_000), replayRecord(T0 + 60_000, false)], { state: 'pending' }],
  ['dead-lettered, then replayed and delivered', ROUTED, [routerRecord(true), deadLetter(1, T0 + 1_000), replayRecord(T0 + 60_000, true)], { state: 'delivered', attempts: 1 }],
  [
    'records win over the current config: routed when it came, filtered now',
    { routed: false, reason: 'disabled' },
    [routerRecord(true), retry(1, T0 + 1_000, false)],
    { state: 'retrying', attempts: 1, lastError: ERROR_503, nextAttemptAt: iso(T0 + 61_000) },
  ],
  ['a dead letter in the same millisecond as its retry is the newer', ROUTED, [retry(1, T0 + 1_000, true), deadLetter(1, T0 + 1_000)], { state: 'dead_lettered', attempts: 1, lastError: ERROR_400, deadLetteredAt: iso(T0 + 995) }],
  ['the router wrote it twice (a redo after a crash): the later copy counts', ROUTED, [routerRecord(true, 10n), routerRecord(false, 11n)], { state: 'pending' }],
  ['a dead letter without a last-attempt-at: its record time', ROUTED, [{ ...deadLetter(4, T0 + 2_000), deadLetteredAtMs: undefined }], { state: 'dead_lettered', attempts: 4, lastError: ERROR_400, deadLetteredAt: iso(T0 + 2_000) }],
];

describe('destinationState', () => {
  it.each(cases)('%s', (_name, routing, stages, expected) => {
    expect(destinationState('hooks', routing, stages)).toEqual({ id: 'hooks', ...expected });
  });

  it('lists the failed answers the newest record keeps, after the other keys: retrying, dead-lettered, delivered after failures', () => {
    const history = [
      { at: iso(T0), urlIndex: 0, status: 500, latencyMs: 12, response: 'boom: database down' },
      { at: iso(T0 + 1_000), urlIndex: 0, status: 503, latencyMs: 8 },
    ];
    const retrying = destinationState('hooks', ROUTED, [routerRecord(true), retry(2, T0 + 1_000, false, { history })]);
    expect(retrying.history).toEqual(history);
    expect(Object.keys(retrying)).toEqual(['id', 'state', 'attempts', 'lastError', 'nextAttemptAt', 'history']);
    const dead = destinationState('hooks', ROUTED, [retry(2, T0 + 1_000, true, { history: history.slice(0, 1) }), { ...deadLetter(3, T0 + 9_000), history }]);
    expect(Object.keys(dead)).toEqual(['id', 'state', 'attempts', 'lastError', 'deadLetteredAt', 'history']);
    expect(dead.history).toEqual(history);
    expect(destinationState('hooks', ROUTED, [routerRecord(true), retry(2, T0 + 1_000, true, { history })])).toEqual({ id: 'hooks', state: 'delivered', attempts: 3, history });
    // A replay starts afresh: its record has none, and the dead letter's are not the newest.
    expect(destinationState('hooks', ROUTED, [{ ...deadLetter(3, T0 + 9_000), history }, replayRecord(T0 + 60_000, true)])).toEqual({ id: 'hooks', state: 'delivered', attempts: 1 });
  });

  it('keeps the documented key order', () => {
    const line = destinationState('hooks', ROUTED, [routerRecord(true), retry(1, T0 + 1_000, false)]);
    expect(Object.keys(line)).toEqual(['id', 'state', 'attempts', 'lastError', 'nextAttemptAt']);
    expect(Object.keys(destinationState('hooks', ROUTED, [deadLetter(1, T0)]))).toEqual(['id', 'state', 'attempts', 'lastError', 'deadLetteredAt']);
  });
});
