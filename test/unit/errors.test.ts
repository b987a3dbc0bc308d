import { describe, expect, it } from 'vitest';
import {
  ListenError,
  NotStartedError,
  ReplayLedgerFullError,
  SendTimeoutError,
  SwitchyardError,
  TopicLayoutError,
  TopicsNotCreatedError,
  TopicsNotReadyError,
} from '../../src/errors.js';
import { SendTimeoutError as GatewaySendTimeoutError } from '../../src/gateway/send-calls.js';
import { ReplayLedgerFullError as ReplayReplayLedgerFullError } from '../../src/delivery/dlq/replay.js';

const refused = Object.assign(new Error('listen EADDRINUSE: address already in use'), { code: 'EADDRINUSE' });

describe('the errors that cross a module', () => {
  const cases: Array<[string, SwitchyardError, string, boolean, string]> = [
    ['send timeout (sent)', new SendTimeoutError(10_000, true), 'send_timeout', true, 'Kafka did not acknowledge within 10000 ms'],
    ['send timeout (held)', new SendTimeoutError(250, false), 'send_timeout', true, 'the write waited 250 ms behind other sends to Kafka and was not sent'],
    [
      'replay ledger full',
      new ReplayLedgerFullError('p.deliveries.main.dlq', 2, 'main'),
      'REPLAY_LEDGER_FULL',
      false,
      'partition 2 of p.deliveries.main.dlq: earlier replays by time range left too many separate stretches of letters behind to record another; run `switchyard replay --destination main` without --since/--until first (it moves the letters left behind), then this one',
    ],
    ['topic layout', new TopicLayoutError('topic a has 3 partitions but b has 1'), 'TOPIC_LAYOUT', false, 'topic a has 3 partitions but b has 1'],
    ['topics not ready', new TopicsNotReadyError('no leader'), 'TOPICS_NOT_READY', true, 'no leader'],
    [
      'topics not created (refused)',
      new TopicsNotCreatedError([{ topic: 'p.deliveries.a', reason: 'POLICY_VIOLATION: Request parameters do not satisfy the configured policy', retriable: false }], ['p.deliveries.b']),
      'TOPICS_NOT_CREATED',
      false,
      "could not create 1 topic(s): p.deliveries.a (POLICY_VIOLATION: Request parameters do not satisfy the configured policy); check the brokers' topic policy, quotas and this principal's Create ACL, or create them beforehand",
    ],
    [
      'topics not created (transient, many)',
      new TopicsNotCreatedError(
        Array.from({ length: 7 }, (_, i) => ({ topic: `t${i}`, reason: 'timeout', retriable: true })),
        [],
      ),
      'TOPICS_NOT_CREATED',
      true,
      "could not create 7 topic(s): t0 (timeout), t1 (timeout), t2 (timeout), t3 (timeout), t4 (timeout) and 2 more; check the brokers' topic policy, quotas and this principal's Create ACL, or create them beforehand",
    ],
    [
      'listen failed',
      new ListenError('the gateway', '0.0.0.0:8080', refused, 'set gateway.port to a free port or stop what holds it'),
      'LISTEN_FAILED',
      false,
      'the gateway could not listen on 0.0.0.0:8080 (EADDRINUSE): set gateway.port to a free port or stop what holds it',
    ],
    ['not started', new NotStartedError('audiences: eraseUser called before start()'), 'NOT_STARTED', false, 'audiences: eraseUser called before start()'],
  ];

  it.each(cases)('%s: code, retriable, message, name', (_what, error, code, retriable, message) => {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.retriable).toBe(retriable);
    expect(error.message).toBe(message);
    expect(error.name).toBe(error.constructor.name);
  });

  it('keeps the cause it wraps', () => {
    expect(new ListenError('the admin server', '127.0.0.1:9000', refused, 'set admin.port').cause).toBe(refused);
    const cause = new Error('broker down');
    expect(new TopicsNotReadyError('created topics x but they have no leader', { cause }).cause).toBe(cause);
  });

  it('are the same classes the modules that throw them export', () => {
    expect(GatewaySendTimeoutError).toBe(SendTimeoutError);
    expect(ReplayReplayLedgerFullError).toBe(ReplayLedgerFullError);
  });
});
