// Defence in depth: a `switchyard all` whose consumer groups someone else joined by hand
// (a member that reads another topic, and leads the group) is handed partitions of a
// topic it does not read. Each of its consumers (the deliverer's partition stream, the
// router's consumer) logs an error naming the topic and the group, does
// not consume them, and /readyz answers 503 until the assignment is its own again.
import { Consumer } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
const daemons: Daemon[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  await killAll(daemons);
  await kafka?.close();
});

interface Readiness {
  status: number;
  services: { ready: boolean; detail?: string }[];
}

async function readyz(port: number): Promise<Readiness> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  const body = (await response.json()) as { services: Readiness['services'] };
  return { status: response.status, services: body.services };
}

/** Waits until the group has exactly the members named, all settled. */
async function waitForMembers(groupId: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const [group] = (await kafka.admin.describeGroups([groupId])).groups;
      return group?.state === 'Stable' && group.members.length === count;
    },
    { timeoutMs: 60_000, what: `${count} member(s) in group ${groupId}` },
  );
}

describe('a member handed partitions of a topic it does not read', () => {
  it('logs an error naming the topic and the group, answers /readyz 503 until the assignment is its own again', async () => {
    const prefix = randomPrefix();
    // The intruders' topic: another deployment's calls, four partitions to share out.
    const foreign = `${randomPrefix()}calls`;
    await kafka.createTopic(foreign, 4);

    // First in each group, so they lead it: a leader assigns the topics it reads.
    // NOTE: under the protocol name the deliverer's consumer (kafkajs) joins with, else the
    // broker refuses its join (INCONSISTENT_GROUP_PROTOCOL); the member metadata and
    // assignments are the consumer protocol's either way.
    const delivererIntruder = new Consumer({
      clientId: randomName('intruder'),
      bootstrapBrokers: testBrokers(),
      groupId: `${prefix}deliverer`,
      autocommit: false,
      protocols: [{ name: 'RoundRobinAssigner', version: 1 }],
    });
    const delivererStream = await delivererIntruder.consume({ topics: [foreign], mode: 'earliest', autocommit: false });
    delivererStream.on('data', () => undefined);
    const platformaticIntruder = new Consumer({ clientId: randomName('intruder'), bootstrapBrokers: testBrokers(), groupId: `${prefix}router`, autocommit: false });
    const stream = await platformaticIntruder.consume({ topics: [foreign], mode: 'earliest', autocommit: false });
    stream.on('data', () => undefined);
    let intrudersStopped = false;
    const stopIntruders = async () => {
      if (intrudersStopped) return;
      intrudersStopped = true;
      await delivererStream.close();
      await delivererIntruder.close();
      await stream.close();
      await platformaticIntruder.close();
    };
    try {
      await waitForMembers(`${prefix}deliverer`, 1);
      await waitForMembers(`${prefix}router`, 1);

      const file = writeConfigFile({
        kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 2 },
        gateway: { port: 0, host: '127.0.0.1' },
        admin: { port: 0, host: '127.0.0.1' },
        sources: [{ id: 'web', destinations: ['hooks'] }],
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
      });
      const daemon = await startRole('all', file);
      daemons.push(daemon);
      const adminPort = (await daemon.waitForLog((line) => line.msg === 'admin server listening', 'the admin port')).port as number;

      for (const group of [`${prefix}deliverer`, `${prefix}router`]) {
        const line = await daemon.waitForLog((l) => l.level === 50 && l.groupId === group, `the error about group ${group}`);
        expect(line.topics).toEqual([foreign]);
        expect(line.msg).toContain(`consumer group ${group} assigned this member partitions of ${foreign}, which it does not read`);
      }
      const unready = await waitFor(
        async () => {
          const state = await readyz(adminPort);
          return state.status === 503 && state.services.filter((s) => s.detail?.includes(foreign)).length === 2 ? state : undefined;
        },
        { timeoutMs: 30_000, what: '/readyz 503 naming the foreign topic for the deliverer and the router' },
      );
      expect(unready.services.map((s) => s.detail).filter((d) => d?.includes(foreign))).toEqual(
        expect.arrayContaining([expect.stringContaining(`consumer group ${prefix}deliverer`), expect.stringContaining(`consumer group ${prefix}router`)]),
      );
      // Still so once the groups settled: nothing of the foreign topic was committed by the daemon.
      expect((await readyz(adminPort)).status).toBe(503);
      for (const group of [`${prefix}deliverer`, `${prefix}router`]) {
        const [committed] = await kafka.admin.fetchOffsets({ groupId: group, topics: [foreign] });
        expect(committed?.partitions.every((p) => p.offset === '-1')).toBe(true);
      }

      // The intruders leave: each group's assignment is the daemon's own again.
      await stopIntruders();
      await waitFor(async () => (await readyz(adminPort)).status === 200, { timeoutMs: 60_000, what: '/readyz 200 once the groups are the daemon\'s own' });
      expect(daemon.logs.some((l) => l.msg === `consumer group ${prefix}deliverer assigns this member only topics it reads again`)).toBe(true);
    } finally {
      await stopIntruders();
    }
  }, 180_000);
});
