// Regression (found by the chaos harness): after a SIGKILL, a router's partitions stayed
// with the dead member for 30 s (kafkajs's default session timeout), and every call on
// them waited that long. The daemon's consumers now use a 10 s session: the survivor
// takes the dead member's partitions within about that.
import { afterAll, describe, expect, it } from 'vitest';
import { CONSUMER_SESSION_TIMEOUT_MS } from '../../src/kafka/index.js';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const PARTITIONS = 2;
/** The session timeout, plus a rebalance's round trips on a busy 2-core machine; well under kafkajs's 30 s. */
const TAKEOVER_BOUND_MS = CONSUMER_SESSION_TIMEOUT_MS + 8_000;

type Assignment = Record<string, number[]>;

describe('consumer session after a SIGKILL', () => {
  const daemons: Daemon[] = [];

  afterAll(async () => {
    await killAll(daemons);
  });

  it("hands a killed router's partitions to the surviving one within the session timeout", async () => {
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('session'), topicPrefix: randomPrefix(), partitions: PARTITIONS },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', destinations: ['main'] }],
      destinations: [{ id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/main' }] } }],
    });
    const joins = (daemon: Daemon, from = 0) =>
      daemon.logs.slice(from).filter((line) => line.msg === 'router joined its consumer group').map((line) => line.assignment as Assignment);
    const size = (assignment: Assignment) => Object.values(assignment).flat().length;
    const all = 2 * PARTITIONS; // calls and deletions

    const first = await startRole('router', file);
    daemons.push(first);
    const second = await startRole('router', file);
    daemons.push(second);
    // Both in the group, the partitions shared between them.
    await waitFor(() => joins(second).some((a) => size(a) > 0 && size(a) < all), { timeoutMs: 60_000, what: 'the two routers to share the partitions' });

    const seen = second.logs.length;
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    await waitFor(() => joins(second, seen).some((a) => size(a) === all), {
      timeoutMs: TAKEOVER_BOUND_MS,
      intervalMs: 200,
      what: `the surviving router to take all ${all} partitions`,
    });
  }, 120_000);
});
