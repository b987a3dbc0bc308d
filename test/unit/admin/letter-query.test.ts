import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, parseListQuery, parseReplayRequest } from '../../../src/admin/letter-query.js';

const NOW = Date.UTC(2026, 4, 1, 12);
const IDS = ['hooks', 'crm'];

describe('parseListQuery', () => {
  const cases: { query: string; value?: unknown; message?: string }[] = [
    { query: 'destination=hooks', value: { destination: 'hooks', range: {}, limit: 50, after: undefined } },
    {
      query: 'destination=crm&since=2h&until=2026-05-01T11:30:00Z&limit=10&cursor=1777633200000.3.42',
      value: { destination: 'crm', range: { sinceMs: NOW - 7_200_000, untilMs: Date.UTC(2026, 4, 1, 11, 30) }, limit: 10, after: { deadLetteredAtMs: 1777633200000, partition: 3, offset: 42n } },
    },
    { query: 'destination=hooks&since=&until=', value: { destination: 'hooks', range: {}, limit: 50, after: undefined } },
    { query: '', message: 'destination is required: one of hooks, crm' },
    { query: 'destination=nope', message: 'no destination has id "nope" (the config has: hooks, crm)' },
    { query: 'destination=hooks&token=x', message: 'unknown parameter "token": the parameters are destination, since, until, limit, cursor' },
    { query: 'destination=hooks&destination=crm', message: 'parameter destination is given 2 times: give it once' },
    { query: 'destination=hooks&since=yesterday', message: 'since "yesterday" is not a time: give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d), not before 1970-01-01' },
    { query: 'destination=hooks&until=1969-12-31T23:59:59Z', message: 'until "1969-12-31T23:59:59Z" is not a time: give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d), not before 1970-01-01' },
    { query: 'destination=hooks&since=1h&until=2h', message: 'since (2026-05-01T11:00:00.000Z) is not before until (2026-05-01T10:00:00.000Z): swap them or widen the range' },
    { query: 'destination=hooks&limit=0', message: 'limit "0" is not a positive whole number' },
    { query: 'destination=hooks&limit=501', message: 'limit 501 is over 500 letters a page: page with cursor instead' },
    { query: 'destination=hooks&cursor=abc', message: 'cursor "abc" is not one this API gave: pass the nextCursor of the page before, unchanged' },
  ];
  for (const { query, value, message } of cases) {
    it(query || '(empty)', () => {
      expect(parseListQuery(query, IDS, NOW)).toEqual(message === undefined ? { ok: true, value } : { ok: false, message });
    });
  }
});

describe('parseReplayRequest', () => {
  const cases: { body: unknown; value?: unknown; message?: string }[] = [
    { body: { destination: 'hooks', dryRun: true }, value: { destination: 'hooks', range: {}, limit: undefined, dryRun: true } },
    { body: { destination: 'hooks', since: '1h', limit: 5, dryRun: false }, value: { destination: 'hooks', range: { sinceMs: NOW - 3_600_000 }, limit: 5, dryRun: false } },
    { body: { destination: 'hooks' }, message: 'field dryRun must be true (count the letters, move none) or false (move them): run a dry run first' },
    { body: { destination: 'hooks', dryRun: 'yes' }, message: 'field dryRun must be true (count the letters, move none) or false (move them): run a dry run first' },
    { body: { destination: 'hooks', dryRun: true, cursor: 'x' }, message: 'unknown field "cursor": the fields are destination, messageId, since, until, limit, dryRun' },
    { body: { destination: 7, dryRun: true }, message: 'field destination must be a string' },
    { body: [], message: 'the body must be a JSON object: {"destination": "…", "messageId"?, "since"?, "until"?, "limit"?, "dryRun": true|false}' },
    { body: { destination: 'hooks', messageId: 'm-2', dryRun: false }, value: { destination: 'hooks', range: {}, limit: undefined, dryRun: false, messageId: 'm-2' } },
    { body: { destination: 'hooks', messageId: '', dryRun: false }, message: 'field messageId is empty: give the messageId of one dead letter, or leave the field out' },
    { body: { destination: 'hooks', messageId: 'm-2', limit: 2, dryRun: false }, message: 'field limit does not go with messageId: a messageId names one letter' },
    { body: { destination: 'hooks', messageId: 7, dryRun: false }, message: 'field messageId must be a string' },
  ];
  for (const { body, value, message } of cases) {
    it(JSON.stringify(body), () => {
      expect(parseReplayRequest(body, IDS, NOW)).toEqual(message === undefined ? { ok: true, value } : { ok: false, message });
    });
  }
});

describe('cursor', () => {
  it('gives back the position it was made from, with or without a time', () => {
    for (const position of [
      { deadLetteredAtMs: NOW, partition: 0, offset: 0n },
      { deadLetteredAtMs: undefined, partition: 11, offset: 123456789012345n },
    ]) {
      expect(decodeCursor(encodeCursor(position))).toEqual(position);
    }
    expect(decodeCursor('1.2')).toBeUndefined();
    expect(decodeCursor('99999999999999999999.1.1')).toBeUndefined();
  });
});
