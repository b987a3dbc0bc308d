// NOTE: kafkajs 2.2.4 (pinned) sends every fetch in full: each of a consumer's
// partitions, every time, and the broker answers for each of them, records or not. The
// deliverer at 1,000 destinations consumes 2,000 topics, so an idle fetch encodes and
// decodes thousands of entries every few seconds: most of its CPU while idle. Kafka has
// incremental fetch sessions for this (KIP-227, Fetch v7+): the broker keeps the list of
// partitions and their fetch offsets; a request then names only the partitions whose
// offset changed (or that were added, or are to be forgotten), and an answer only those
// with something to say. kafkajs encodes the session fields but always sends "no session".
// This module replaces Broker.fetch with one that keeps a session per broker connection.
//
// What it keeps equal: the broker never moves a session's fetch offset by itself; it
// serves each partition from the offset last sent for it. A request therefore names a
// partition whenever kafkajs asks for it at another offset than the session holds, so
// the records served are those kafkajs asked for, as with a full fetch. Partitions kafkajs
// leaves out (paused, or not assigned here any more) are forgotten. Anything unexpected
// (an error, a lost session after a broker restart, a refused session) ends the session
// and the next request is a full one, which starts a new session.
import { createRequire } from 'node:module';

export interface PartitionFetch {
  partition: number;
  fetchOffset: string;
  maxBytes: number;
}

export interface TopicFetch {
  topic: string;
  partitions: PartitionFetch[];
}

/** The session fields of one Fetch request, and what it names. */
export interface SessionRequest {
  sessionId: number;
  sessionEpoch: number;
  topics: TopicFetch[];
  forgottenTopics: { topic: string; partitions: number[] }[];
  /** Whether the request names every partition (it starts a new session). */
  full: boolean;
}

/** A session's epoch counts 1, 2, … and wraps past the largest INT32 back to 1 (0 starts a session). */
function nextEpoch(epoch: number): number {
  return epoch >= 0x7fffffff ? 1 : epoch + 1;
}

/**
 * One broker's fetch session as this client last agreed it with the broker: which
 * partitions it holds, at which fetch offset and size. Pure bookkeeping: `request`
 * says what to send, `answered` records the broker's answer to it.
 */
export class FetchSession {
  private id = 0;
  private epoch = 0;
  /** topic → partition → "fetchOffset/maxBytes" as the broker holds it. */
  private held = new Map<string, Map<number, string>>();

  get sessionId(): number {
    return this.id;
  }

  /** The request for kafkajs's full list of partitions `wanted`. */
  request(wanted: readonly TopicFetch[]): SessionRequest {
    if (this.id === 0) return { sessionId: 0, sessionEpoch: 0, topics: [...wanted], forgottenTopics: [], full: true };
    const topics: TopicFetch[] = [];
    const wantedNow = new Map<string, Set<number>>();
    for (const { topic, partitions } of wanted) {
      const held = this.held.get(topic);
      const named = new Set<number>();
      const changed: PartitionFetch[] = [];
      for (const p of partitions) {
        named.add(p.partition);
        if (held?.get(p.partition) !== stateOf(p)) changed.push(p);
      }
      wantedNow.set(topic, named);
      if (changed.length > 0) topics.push({ topic, partitions: changed });
    }
    const forgottenTopics: SessionRequest['forgottenTopics'] = [];
    for (const [topic, held] of this.held) {
      const named = wantedNow.get(topic);
      const gone = [...held.keys()].filter((partition) => named?.has(partition) !== true);
      if (gone.length > 0) forgottenTopics.push({ topic, partitions: gone });
    }
    return { sessionId: this.id, sessionEpoch: this.epoch, topics, forgottenTopics, full: false };
  }

  /** The broker answered `request` without a session error, naming `sessionId` (0: it keeps no session). */
  answered(request: SessionRequest, sessionId: number): void {
    if (sessionId === 0 || (!request.full && sessionId !== this.id)) {
      this.reset();
      return;
    }
    if (request.full) this.held.clear();
    for (const { topic, partitions } of request.forgottenTopics) {
      const held = this.held.get(topic);
      for (const partition of partitions) held?.delete(partition);
      if (held?.size === 0) this.held.delete(topic);
    }
    for (const { topic, partitions } of request.topics) {
      let held = this.held.get(topic);
      if (held === undefined) this.held.set(topic, (held = new Map()));
      for (const p of partitions) held.set(p.partition, stateOf(p));
    }
    this.id = sessionId;
    this.epoch = request.full ? 1 : nextEpoch(this.epoch);
  }

  /** Forgets the session: the next request is a full one, starting a new session. */
  reset(): void {
    this.id = 0;
    this.epoch = 0;
    this.held.clear();
  }
}

function stateOf(p: PartitionFetch): string {
  return `${p.fetchOffset}/${p.maxBytes}`;
}

/** Top-level answers that say the session is gone: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH. */
const SESSION_ERRORS = new Set([70, 71]);

interface FetchOptions {
  replicaId?: number;
  isolationLevel?: number;
  maxWaitTime?: number;
  minBytes?: number;
  maxBytes?: number;
  topics: TopicFetch[];
  rackId?: string;
}

interface FetchAnswer {
  errorCode?: number;
  sessionId?: number;
  responses: { topicName: string; partitions: { partition: number }[] }[];
}

interface ProtocolRequest {
  request: { apiVersion: number };
}

interface BrokerInternals {
  lookupRequest(apiKey: number, definitions: unknown): (options: object) => ProtocolRequest;
}

type Send = (this: BrokerInternals, request: ProtocolRequest) => Promise<FetchAnswer>;

interface BrokerSession {
  session: FetchSession;
  /** A fetch of this broker is under way: a second one at the same time goes without the session. */
  busy: boolean;
}

const sessions = new WeakMap<object, BrokerSession>();

/** Counts, for tests and the curious: requests sent in each mode. */
export const fetchSessionCounts = { full: 0, incremental: 0, sessionless: 0, partitionsNamed: 0 };

let applied = false;

/** Replaces kafkajs's Broker.fetch (once per process) where kafkajs has the shape this module knows; elsewhere leaves it. */
export function applyFetchSessions(): void {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  let proto: Record<string | symbol, unknown>;
  let apiKeys: { Fetch: number };
  let definitions: unknown;
  try {
    proto = (require('kafkajs/src/broker/index.js') as { prototype: Record<string | symbol, unknown> }).prototype;
    apiKeys = require('kafkajs/src/protocol/requests/apiKeys.js') as { Fetch: number };
    definitions = (require('kafkajs/src/protocol/requests/index.js') as { requests?: { Fetch?: unknown } }).requests?.Fetch;
  } catch {
    return; // another kafkajs layout: left as it is
  }
  const original = proto.fetch;
  const sendSymbol = Object.getOwnPropertySymbols(proto).find((s) => s.description === 'private:Broker:sendRequest');
  const send = sendSymbol === undefined ? undefined : proto[sendSymbol];
  if (typeof original !== 'function' || typeof send !== 'function' || typeof apiKeys.Fetch !== 'number' || definitions === undefined) return;
  const fullFetch = original as (this: BrokerInternals, options: FetchOptions) => Promise<FetchAnswer>;

  proto.fetch = async function fetch(this: BrokerInternals, options: FetchOptions): Promise<FetchAnswer> {
    let state = sessions.get(this);
    if (state === undefined) sessions.set(this, (state = { session: new FetchSession(), busy: false }));
    if (state.busy) {
      fetchSessionCounts.sessionless++;
      return fullFetch.call(this, options);
    }
    state.busy = true;
    try {
      return await fetchInSession(this, state.session, options);
    } finally {
      state.busy = false;
    }
  };

  async function fetchInSession(broker: BrokerInternals, session: FetchSession, options: FetchOptions): Promise<FetchAnswer> {
    const build = broker.lookupRequest(apiKeys.Fetch, definitions);
    for (let attempt = 0; ; attempt++) {
      const request = session.request(options.topics);
      const protocolRequest = build({
        replicaId: options.replicaId,
        isolationLevel: options.isolationLevel,
        maxWaitTime: options.maxWaitTime ?? 5_000,
        minBytes: options.minBytes ?? 1,
        maxBytes: options.maxBytes ?? 10_485_760,
        topics: request.topics,
        rackId: options.rackId ?? '',
        sessionId: request.sessionId,
        sessionEpoch: request.sessionEpoch,
        forgottenTopics: request.forgottenTopics,
      });
      if (protocolRequest.request.apiVersion < 7) {
        // A broker without fetch sessions: kafkajs's own full fetch.
        fetchSessionCounts.sessionless++;
        return fullFetch.call(broker, options);
      }
      let answer: FetchAnswer;
      try {
        answer = await (send as Send).call(broker, protocolRequest);
      } catch (error) {
        session.reset(); // did the broker take the epoch? Unknown: start again
        throw error;
      }
      fetchSessionCounts[request.full ? 'full' : 'incremental']++;
      fetchSessionCounts.partitionsNamed += request.topics.reduce((n, t) => n + t.partitions.length, 0);
      const errorCode = answer.errorCode ?? 0;
      if (errorCode !== 0) {
        session.reset();
        // The session is gone (a broker restart, an eviction): once more, in full.
        if (SESSION_ERRORS.has(errorCode) && attempt === 0) continue;
        fetchSessionCounts.sessionless++;
        return fullFetch.call(broker, options);
      }
      session.answered(request, answer.sessionId ?? 0);
      return request.full ? answer : onlyWanted(answer, options.topics);
    }
  }
}

/** An incremental answer keeps to the partitions kafkajs asked for (it looks each one up in its request). */
function onlyWanted(answer: FetchAnswer, wanted: readonly TopicFetch[]): FetchAnswer {
  if (answer.responses.length === 0) return answer;
  const byTopic = new Map(wanted.map((t) => [t.topic, new Set(t.partitions.map((p) => p.partition))]));
  const responses = answer.responses.flatMap((r) => {
    const partitions = byTopic.get(r.topicName);
    if (partitions === undefined) return [];
    const kept = r.partitions.filter((p) => partitions.has(p.partition));
    return kept.length === 0 ? [] : [{ ...r, partitions: kept }];
  });
  return { ...answer, responses };
}
