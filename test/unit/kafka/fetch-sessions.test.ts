import { describe, expect, it } from 'vitest';
import { FetchSession } from '../../../src/kafka/fetch-sessions.js';
import type { TopicFetch } from '../../../src/kafka/fetch-sessions.js';

const at = (topic: string, ...offsets: [number, string][]): TopicFetch => ({
  topic,
  partitions: offsets.map(([partition, fetchOffset]) => ({ partition, fetchOffset, maxBytes: 1_048_576 })),
});

const named = (topics: TopicFetch[]) => topics.map((t) => `${t.topic}:${t.partitions.map((p) => `${p.partition}@${p.fetchOffset}`).join(',')}`);

/** A session the broker accepted with id 7 for `wanted`. */
function opened(wanted: TopicFetch[]): FetchSession {
  const session = new FetchSession();
  session.answered(session.request(wanted), 7);
  return session;
}

describe('FetchSession', () => {
  it('starts a session with a full request: every partition, session 0, epoch 0', () => {
    const request = new FetchSession().request([at('a', [0, '5'], [1, '9']), at('b', [0, '0'])]);
    expect(request).toMatchObject({ sessionId: 0, sessionEpoch: 0, full: true, forgottenTopics: [] });
    expect(named(request.topics)).toEqual(['a:0@5,1@9', 'b:0@0']);
  });

  it('then names nothing while kafkajs asks for the same offsets, counting epochs 1, 2, …', () => {
    const wanted = [at('a', [0, '5'], [1, '9']), at('b', [0, '0'])];
    const session = opened(wanted);
    const first = session.request(wanted);
    expect(first).toMatchObject({ sessionId: 7, sessionEpoch: 1, full: false, topics: [], forgottenTopics: [] });
    session.answered(first, 7);
    expect(session.request(wanted).sessionEpoch).toBe(2);
  });

  it('names a partition whose fetch offset moved, and keeps naming it until the broker answered', () => {
    const session = opened([at('a', [0, '5'], [1, '9'])]);
    const moved = [at('a', [0, '5'], [1, '12'])];
    const request = session.request(moved);
    expect(named(request.topics)).toEqual(['a:1@12']);
    // No answer (the request failed, say): the same again
    expect(named(session.request(moved).topics)).toEqual(['a:1@12']);
    session.answered(request, 7);
    expect(session.request(moved).topics).toEqual([]);
  });

  it('names a partition fetched again from an earlier offset (a seek back)', () => {
    const session = opened([at('a', [0, '20'])]);
    expect(named(session.request([at('a', [0, '3'])]).topics)).toEqual(['a:0@3']);
  });

  it('forgets the partitions kafkajs leaves out (paused or unassigned), and adds them back when asked again', () => {
    const session = opened([at('a', [0, '5'], [1, '9']), at('b', [0, '0'])]);
    const paused = session.request([at('a', [0, '5'])]);
    expect(paused.topics).toEqual([]);
    expect(paused.forgottenTopics).toEqual([
      { topic: 'a', partitions: [1] },
      { topic: 'b', partitions: [0] },
    ]);
    session.answered(paused, 7);
    expect(session.request([at('a', [0, '5'])]).forgottenTopics).toEqual([]);
    expect(named(session.request([at('a', [0, '5'], [1, '9'])]).topics)).toEqual(['a:1@9']);
  });

  it('starts over in full after a reset, or when the broker keeps no session (id 0) or answers with another id', () => {
    const wanted = [at('a', [0, '5'])];
    const reset = opened(wanted);
    reset.reset();
    expect(reset.request(wanted)).toMatchObject({ sessionId: 0, sessionEpoch: 0, full: true });

    const refused = new FetchSession();
    refused.answered(refused.request(wanted), 0);
    expect(refused.request(wanted).full).toBe(true);

    const other = opened(wanted);
    other.answered(other.request(wanted), 8);
    expect(other.request(wanted)).toMatchObject({ sessionId: 0, full: true });
  });

  it('a full request replaces what the session held', () => {
    const session = opened([at('a', [0, '5']), at('b', [0, '1'])]);
    session.reset();
    session.answered(session.request([at('c', [0, '2'])]), 9);
    const next = session.request([at('c', [0, '2'])]);
    expect(next).toMatchObject({ sessionId: 9, sessionEpoch: 1, topics: [], forgottenTopics: [] });
  });
});
