import { describe, expect, it } from 'vitest';
import { createKafkaLogLevels, transientKind } from '../../../src/kafka/log-levels.js';
import type { KafkaLogLine } from '../../../src/kafka/log-levels.js';

// Lines as kafkajs writes them (src/network/connection.js, src/cluster/brokerPool.js, ...).
const notLeader: KafkaLogLine = {
  namespace: 'Connection',
  level: 'error',
  message: 'Response ListOffsets(key: 2, version: 3)',
  error: 'This server is not the leader for that topic-partition',
};
const noCoordinator: KafkaLogLine = {
  namespace: 'Connection',
  level: 'error',
  message: 'Response GroupCoordinator(key: 10, version: 2)',
  error: 'The group coordinator is not available',
};
const refused: KafkaLogLine = { namespace: 'Connection', level: 'error', message: 'Connection error: connect ECONNREFUSED 127.0.0.1:9092' };
const seedBroker: KafkaLogLine = {
  namespace: 'BrokerPool',
  level: 'error',
  message: 'Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:9092',
};
const crash: KafkaLogLine = { namespace: 'Consumer', level: 'error', message: 'Crash: KafkaJSNumberOfRetriesExceeded: The group coordinator is not available' };
const rebalancing: KafkaLogLine = { namespace: 'Runner', level: 'warn', message: 'The group is rebalancing, re-joining' };

describe('transientKind', () => {
  it.each([
    ['a broker error response', notLeader, 'response: This server is not the leader for that topic-partition'],
    ['another broker error response', noCoordinator, 'response: The group coordinator is not available'],
    ['a refused connection', refused, 'connection'],
    ['a connection timeout', { namespace: 'Connection', level: 'error', message: 'Connection timeout' }, 'connection'],
    ['a seed broker kafkajs retries', seedBroker, 'connection'],
    ['a broker kafkajs reconnects to', { namespace: 'BrokerPool', level: 'error', message: 'Failed to connect to broker, reconnecting' }, 'connection'],
    ['a consumer crash', crash, undefined],
    ['a "Response" line from outside the connection', { namespace: 'RequestQueue', level: 'warn', message: 'Response without match' }, undefined],
  ] as [string, KafkaLogLine, string | undefined][])('%s', (_name, line, kind) => {
    expect(transientKind(line)).toBe(kind);
  });
});

describe('createKafkaLogLevels', () => {
  const levels = () => createKafkaLogLevels({ lastingMs: 15_000, quietMs: 30_000 });

  it.each([
    ['INFO chatter goes to debug', { namespace: 'Consumer', level: 'info', message: 'Starting' }, 'debug'],
    ['DEBUG stays debug', { namespace: 'Connection', level: 'debug', message: 'Request Metadata' }, 'debug'],
    ['the idempotent producer warning goes to debug', { namespace: 'Producer', level: 'warn', message: 'Limiting retries for the idempotent producer may invalidate EoS guarantees' }, 'debug'],
    ['a first transient error goes to debug', notLeader, 'debug'],
    ['a first refused connection goes to debug', refused, 'debug'],
    ['a consumer crash goes to debug (its CRASH listener logs it)', crash, 'debug'],
    ['so does the restart notice', { namespace: 'Consumer', level: 'error', message: 'Restarting the consumer in 200ms' }, 'debug'],
    ['another consumer error keeps ERROR', { namespace: 'Consumer', level: 'error', message: 'Caught error when stopping the consumer: boom' }, 'error'],
    ['an admin failure keeps ERROR', { namespace: 'Admin', level: 'error', message: 'Failed to execute listener: boom' }, 'error'],
    ['a rebalance warning keeps WARN', rebalancing, 'warn'],
  ] as [string, KafkaLogLine, string][])('%s', (_name, line, level) => {
    expect(levels()(line, 1_000).level).toBe(level);
  });

  it('shows a transient condition at kafkajs level once it lasted, with how long and how often', () => {
    const levelOf = levels();
    const seen = [0, 2_000, 6_000, 14_999, 15_000, 25_000].map((at) => levelOf(refused, at));
    expect(seen.map((d) => d.level)).toEqual(['debug', 'debug', 'debug', 'debug', 'error', 'error']);
    expect(seen[4]!.lasting).toEqual({ ms: 15_000, occurrences: 5 });
    expect(seen[5]!.lasting).toEqual({ ms: 25_000, occurrences: 6 });
    expect(seen[0]!.lasting).toBeUndefined();
  });

  it('counts each condition apart: a new one starts quiet while another lasts', () => {
    const levelOf = levels();
    levelOf(notLeader, 0);
    expect(levelOf(notLeader, 20_000).level).toBe('error');
    expect(levelOf(noCoordinator, 20_000).level).toBe('debug');
    expect(levelOf(refused, 21_000).level).toBe('debug');
  });

  it('starts over after a quiet spell longer than quietMs', () => {
    const levelOf = levels();
    levelOf(noCoordinator, 0);
    expect(levelOf(noCoordinator, 29_000).level).toBe('error');
    // 31 s of silence: the condition had ended; this is a new, short one.
    expect(levelOf(noCoordinator, 60_001).level).toBe('debug');
    expect(levelOf(noCoordinator, 61_000).level).toBe('debug');
  });

  it('keeps a streak going through pauses shorter than quietMs (kafkajs backs off up to 10 s)', () => {
    const levelOf = levels();
    const at = [0, 9_000, 18_000];
    const decisions = at.map((ms) => levelOf(seedBroker, ms));
    expect(decisions.map((d) => d.level)).toEqual(['debug', 'debug', 'error']);
  });

  it('by default: a minute of unbroken refusals stays at debug, past it they show', () => {
    const levelOf = createKafkaLogLevels();
    let decision = levelOf(notLeader, 0);
    // One refusal every 5 s, as ensure-topics' and kafkajs's retries make them.
    for (let at = 5_000; at < 60_000; at += 5_000) decision = levelOf(notLeader, at);
    expect(decision.level).toBe('debug');
    expect(levelOf(notLeader, 60_000).level).toBe('error');
  });
});
