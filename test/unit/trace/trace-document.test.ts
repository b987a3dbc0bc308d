import { describe, expect, it } from 'vitest';
import type { KeyRecords } from '../../../src/kafka/index.js';
import { traceDocument, traceMessage, traceText } from '../../../src/trace/trace-document.js';
import { retentionNote } from '../../../src/trace/trace-notes.js';

const T0 = Date.UTC(2026, 4, 1, 12);

const delivered = traceMessage(
  { messageId: 'm-1', type: 'track', event: 'Order Completed', source: 'web', receivedAtMs: T0, routes: [] },
  [
    { id: 'hooks-main', state: 'retrying', attempts: 3, lastError: 'https://hooks.example.com: 503 Service Unavailable', nextAttemptAt: '2026-05-01T14:05:00.000Z' },
    { id: 'crm', state: 'filtered', reason: 'integrations' },
    ...Array.from({ length: 12 }, (_, i) => ({ id: `d${i}`, state: 'filtered' as const, reason: 'not_connected' })),
  ],
);
const invalid = traceMessage({ messageId: null, type: null, source: null, receivedAtMs: T0 + 1_000, invalid: 'malformed_json: not JSON', routes: [] }, []);

describe('the trace document', () => {
  it('has the documented keys, in order, for userId and for anonymousId', () => {
    const window = { sinceMs: T0 - 3_600_000, untilMs: T0 + 60_000 };
    const doc = traceDocument({ kind: 'userId', id: 'u-1' }, window, [delivered, invalid]);
    expect(JSON.stringify(doc)).toBe(
      '{"userId":"u-1","since":"2026-05-01T11:00:00.000Z","until":"2026-05-01T12:01:00.000Z","reasonsFrom":"current config","messages":[' +
        '{"messageId":"m-1","type":"track","event":"Order Completed","source":"web","receivedAt":"2026-05-01T12:00:00.000Z","destinations":[' +
        '{"id":"hooks-main","state":"retrying","attempts":3,"lastError":"https://hooks.example.com: 503 Service Unavailable","nextAttemptAt":"2026-05-01T14:05:00.000Z"},' +
        '{"id":"crm","state":"filtered","reason":"integrations"},' +
        Array.from({ length: 12 }, (_, i) => `{"id":"d${i}","state":"filtered","reason":"not_connected"}`).join(',') +
        ']},' +
        '{"messageId":null,"type":null,"source":null,"receivedAt":"2026-05-01T12:00:01.000Z","invalid":"malformed_json: not JSON","destinations":[]}]}',
    );
    expect(Object.keys(traceDocument({ kind: 'anonymousId', id: 'a-7' }, window, []))).toEqual(['anonymousId', 'since', 'until', 'reasonsFrom', 'messages']);
  });

  it('reads for a person: a block per call, a line per destination', () => {
    const doc = traceDocument({ kind: 'userId', id: 'u-1' }, { sinceMs: T0 - 3_600_000, untilMs: T0 + 60_000 }, [delivered, invalid]);
    expect(traceText(doc)).toBe(
      [
        'calls of user "u-1" received from 2026-05-01T11:00:00.000Z until 2026-05-01T12:01:00.000Z (filter reasons from the current config)',
        '',
        '2026-05-01T12:00:00.000Z  track "Order Completed"  source web  message m-1',
        '  hooks-main  retrying       attempts 3  next attempt 2026-05-01T14:05:00.000Z  last error: https://hooks.example.com: 503 Service Unavailable',
        '  crm         filtered       by integrations',
        '  not connected to source web: d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, … (12 in all)',
        '',
        '2026-05-01T12:00:01.000Z  (no type)  source (unknown)  message (none)',
        '  invalid: malformed_json: not JSON',
        '',
        '2 call(s)',
        '',
      ].join('\n'),
    );
  });
});

describe('the attempts of a destination', () => {
  it('follow their destination, oldest first: when, which URL, the status or error, how long, the start of the body', () => {
    const retried = traceMessage({ messageId: 'm-2', type: 'track', event: 'Order Completed', source: 'web', receivedAtMs: T0, routes: [] }, [
      {
        id: 'hooks',
        state: 'dead_lettered',
        attempts: 3,
        lastError: 'webhooks[0] https://h.test: 500 Internal Server Error: boom again',
        deadLetteredAt: '2026-05-01T12:00:03.000Z',
        history: [
          { at: '2026-05-01T12:00:00.000Z', urlIndex: 0, status: 500, latencyMs: 12, response: 'boom: database down' },
          { at: '2026-05-01T12:00:01.000Z', urlIndex: 1, error: 'connection refused', latencyMs: 1 },
          { at: '2026-05-01T12:00:02.000Z', urlIndex: 0, status: 503, latencyMs: 7 },
        ],
      },
    ]);
    const lines = traceText(traceDocument({ kind: 'userId', id: 'u-1' }, { sinceMs: T0, untilMs: T0 + 60_000 }, [retried])).split('\n');
    expect(lines.slice(3, 7)).toEqual([
      '  hooks  dead_lettered  attempts 3  at 2026-05-01T12:00:03.000Z  last error: webhooks[0] https://h.test: 500 Internal Server Error: boom again',
      '      2026-05-01T12:00:00.000Z  webhooks[0]  500  12 ms  boom: database down',
      '      2026-05-01T12:00:01.000Z  webhooks[1]  connection refused  1 ms',
      '      2026-05-01T12:00:02.000Z  webhooks[0]  503  7 ms',
    ]);
  });
});

describe('retentionNote', () => {
  const read = (range: Partial<KeyRecords['range']>, firstTimestampMs: number | undefined): KeyRecords => ({
    range: { topic: 'sy.calls', partition: 4, logStart: 0n, start: 0n, end: 10n, ...range },
    records: [],
    scanned: 0,
    firstTimestampMs,
  });
  const SINCE = T0 - 3_600_000;

  it.each<[string, KeyRecords, string | undefined]>([
    ['nothing deleted yet', read({}, SINCE + 1), undefined],
    ['the window starts after the first kept record', read({ logStart: 5n, start: 7n }, SINCE + 1), undefined],
    ['the first kept record is older than the window', read({ logStart: 5n, start: 5n }, SINCE - 1), undefined],
    [
      'the window reaches back past the first kept record',
      read({ logStart: 5n, start: 5n }, T0 - 60_000),
      'partition 4 of sy.calls keeps records from 2026-05-01T11:59:00.000Z on (older ones are past the topic\'s retention): the window from 2026-05-01T11:00:00.000Z is traced from there',
    ],
    ['every record is gone', read({ logStart: 10n, start: 10n, end: 10n }, undefined), "partition 4 of sy.calls holds no records any more (all are past the topic's retention): what the window had there is not traced"],
  ])('%s', (_name, given, note) => {
    expect(retentionNote(given, SINCE)).toBe(note);
  });
});
