import { describe, expect, it } from 'vitest';
import { commitUntilDone } from '../../../src/runtime/commit-until-done.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { FakeKafkaError } from '../../support/kafka-error.js';

function harness(outcomes: (Error | 'ok')[], owned: () => boolean = () => true) {
  let calls = 0;
  const sleeps: number[] = [];
  const run = commitUntilDone(
    async () => {
      const outcome = outcomes[Math.min(calls, outcomes.length - 1)]!;
      calls += 1;
      if (outcome !== 'ok') throw outcome;
    },
    {
      stillOwned: owned,
      logger: silentLogger(),
      what: 'calls partition 0',
      initialDelayMs: 100,
      maxDelayMs: 350,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    },
  );
  return { run, calls: () => calls, sleeps };
}

describe('commitUntilDone', () => {
  it('tries again at most a second apart by default, so that it commits within a second of the broker\'s return', async () => {
    const refused = new FakeKafkaError('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    const sleeps: number[] = [];
    let calls = 0;
    await commitUntilDone(
      async () => {
        calls += 1;
        if (calls < 7) throw refused;
      },
      { stillOwned: () => true, logger: silentLogger(), what: 'calls partition 0', sleep: async (ms) => void sleeps.push(ms) },
    );
    expect(sleeps).toEqual([200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('commits once when the broker answers', async () => {
    const h = harness(['ok']);
    await h.run;
    expect(h.calls()).toBe(1);
    expect(h.sleeps).toEqual([]);
  });

  it('keeps trying through connection failures and a moved coordinator, backing off to the cap', async () => {
    const refused = new FakeKafkaError('Connection error: connect ECONNREFUSED 127.0.0.1:9092');
    const moved = new FakeKafkaError('This is not the correct coordinator for this group', 'NOT_COORDINATOR_FOR_GROUP');
    const h = harness([refused, refused, moved, refused, 'ok']);
    await h.run;
    expect(h.calls()).toBe(5);
    expect(h.sleeps).toEqual([100, 200, 350, 350]);
  });

  it('rethrows at once when the generation is over, so kafkajs rejoins and reads from the last commit', async () => {
    const lost = new FakeKafkaError('retries exceeded', undefined, { cause: new FakeKafkaError('rebalancing', 'REBALANCE_IN_PROGRESS') });
    const h = harness([lost, 'ok']);
    await expect(h.run).rejects.toBe(lost);
    expect(h.calls()).toBe(1);
  });

  it('rethrows what kafkajs does not call retriable: an authorization failure, a bug', async () => {
    const denied = new FakeKafkaError('Not authorized to access group', 'GROUP_AUTHORIZATION_FAILED', undefined, false);
    const h = harness([denied, 'ok']);
    await expect(h.run).rejects.toBe(denied);
    const bug = new TypeError('cannot read properties of undefined');
    const h2 = harness([bug, 'ok']);
    await expect(h2.run).rejects.toBe(bug);
    expect(h.calls() + h2.calls()).toBe(2);
  });

  it('gives up quietly once the partition is no longer this consumer\'s (stopping, a seek)', async () => {
    const h = harness([new FakeKafkaError('Connection error')], () => false);
    await h.run;
    expect(h.calls()).toBe(1);
  });
});
