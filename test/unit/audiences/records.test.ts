import { describe, expect, it } from 'vitest';
import { parseCallBytes } from '../../../src/calls/index.js';
import type { Call } from '../../../src/calls/index.js';
import {
  audienceCallMessage,
  audienceDeletionMessage,
  audienceEraseMessage,
  audienceSeenMessage,
  audienceTopicNames,
  decodeAudienceRecord,
} from '../../../src/audiences/records.js';
import { createTopology } from '../../../src/runtime/topology.js';

const RECEIVED = Date.UTC(2026, 4, 1, 12);

function call(text: string): Call {
  const parsed = parseCallBytes(Buffer.from(text));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.call;
}

describe('audience.events records', () => {
  it('names the topics under the prefix; the changelog is compacted', () => {
    expect(audienceTopicNames('sy.')).toEqual({ events: 'sy.audience.events', profiles: 'sy.audience.profiles', userSources: 'sy.user.sources' });
    expect(createTopology('sy.').audienceState()).toEqual([
      { topic: 'sy.audience.events' },
      { topic: 'sy.audience.profiles', compacted: true },
      { topic: 'sy.user.sources', compacted: true },
    ]);
  });

  const cases: Array<[string, string, boolean, string, string]> = [
    [
      'identify keeps traits, keyed by userId; anonymousId is left out',
      '{"type":"identify","userId":"u-1","anonymousId":"a-1","traits":{"plan":"pro"},"timestamp":"2026-05-01T11:00:00.000Z","context":{"ip":"1.2.3.4"}}',
      true,
      'u-1',
      `{"kind":"call","type":"identify","userId":"u-1","sourceId":"web","timestampMs":${Date.UTC(2026, 4, 1, 11)},"receivedAtMs":${RECEIVED},"traits":{"plan":"pro"}}`,
    ],
    [
      'track keeps the event name, not properties; no timestamp → received',
      '{"type":"track","anonymousId":"a-1","event":"Order Completed","properties":{"total":5}}',
      true,
      'a-1',
      `{"kind":"call","type":"track","anonymousId":"a-1","sourceId":"web","timestampMs":${RECEIVED},"receivedAtMs":${RECEIVED},"event":"Order Completed"}`,
    ],
    [
      'a track the source filters out is recorded as seen only',
      '{"type":"track","userId":"u-1","event":"Debug Ping"}',
      false,
      'u-1',
      `{"kind":"call","type":"track","userId":"u-1","sourceId":"web","timestampMs":${RECEIVED},"receivedAtMs":${RECEIVED}}`,
    ],
    [
      'page: seen only',
      '{"type":"page","userId":"u-1","name":"Home","properties":{"path":"/"}}',
      true,
      'u-1',
      `{"kind":"call","type":"page","userId":"u-1","sourceId":"web","timestampMs":${RECEIVED},"receivedAtMs":${RECEIVED}}`,
    ],
  ];
  it.each(cases)('%s', (_name, text, countEvent, key, value) => {
    const message = audienceCallMessage(call(text), 'web', RECEIVED, { countEvent });
    expect(message.key.toString()).toBe(key);
    expect(message.value.toString()).toBe(value);
    const decoded = decodeAudienceRecord(message.value);
    expect(decoded.ok).toBe(true);
  });

  it('carries where the router read the call, and reads it back', () => {
    const message = audienceCallMessage(call('{"type":"page","userId":"u-1"}'), 'web', RECEIVED, { origin: { partition: 2, offset: 41 } });
    expect(message.value.toString()).toBe(
      `{"kind":"call","type":"page","userId":"u-1","sourceId":"web","timestampMs":${RECEIVED},"receivedAtMs":${RECEIVED},"callPartition":2,"callOffset":41}`,
    );
    expect(decodeAudienceRecord(message.value)).toMatchObject({ ok: true, record: { callPartition: 2, callOffset: 41 } });
  });

  it('round-trips erase and deletion records, keyed by userId', () => {
    const erase = audienceEraseMessage('u-1');
    expect(erase).toEqual({ key: 'u-1', value: '{"kind":"erase","userId":"u-1"}' });
    expect(decodeAudienceRecord(Buffer.from(erase.value as string))).toEqual({ ok: true, record: { kind: 'erase', userId: 'u-1' } });
    const some = audienceEraseMessage('u-1', ['web']);
    expect(some).toEqual({ key: 'u-1', value: '{"kind":"erase","userId":"u-1","sourceIds":["web"]}' });
    expect(decodeAudienceRecord(Buffer.from(some.value as string))).toEqual({ ok: true, record: { kind: 'erase', userId: 'u-1', sourceIds: ['web'] } });
    const deletion = audienceDeletionMessage({ userId: 'u-1', sourceIds: ['web'], requestedAtMs: RECEIVED });
    expect(deletion.key.toString()).toBe('u-1');
    expect(decodeAudienceRecord(deletion.value)).toEqual({
      ok: true,
      record: { kind: 'deletion', userId: 'u-1', sourceIds: ['web'], requestedAtMs: RECEIVED },
    });
  });

  it('round-trips a seen record, keyed by userId', () => {
    const seen = audienceSeenMessage('u-1', 'web');
    expect(seen.key.toString()).toBe('u-1');
    expect(seen.value.toString()).toBe('{"kind":"seen","userId":"u-1","sourceId":"web"}');
    expect(decodeAudienceRecord(seen.value)).toEqual({ ok: true, record: { kind: 'seen', userId: 'u-1', sourceId: 'web' } });
  });

  const bad: Array<[string, string | null, RegExp]> = [
    ['null', null, /empty/],
    ['not JSON', '{', /not JSON/],
    ['an array', '[]', /not a JSON object/],
    ['unknown kind', '{"kind":"x"}', /unknown kind "x"/],
    ['erase without userId', '{"kind":"erase"}', /without a userId/],
    ['erase with bad sourceIds', '{"kind":"erase","userId":"u","sourceIds":[""]}', /list of source ids/],
    ['seen without source', '{"kind":"seen","userId":"u"}', /without a userId and a sourceId/],
    ['deletion with bad sourceIds', '{"kind":"deletion","userId":"u","sourceIds":"web","requestedAtMs":1}', /list of source ids/],
    ['call without identity', '{"kind":"call","type":"track","sourceId":"web","timestampMs":1,"receivedAtMs":1}', /userId or anonymousId/],
    ['call without source', '{"kind":"call","type":"track","userId":"u","timestampMs":1,"receivedAtMs":1}', /sourceId/],
    ['call offset without partition', '{"kind":"call","type":"page","userId":"u","sourceId":"w","timestampMs":1,"receivedAtMs":1,"callOffset":3}', /together/],
    ['call with array traits', '{"kind":"call","type":"identify","userId":"u","sourceId":"w","timestampMs":1,"receivedAtMs":1,"traits":[]}', /traits/],
  ];
  it.each(bad)('refuses %s with the reason', (_name, text, error) => {
    const result = decodeAudienceRecord(text === null ? null : Buffer.from(text));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });
});
