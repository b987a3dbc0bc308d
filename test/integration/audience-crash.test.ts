// A `switchyard router` process (router + audience processor) is SIGKILLed while its
// audience processor is mid-stream; a new one finishes. No membership change is lost,
// and no user is announced twice with a different messageId (a re-sync): a change
// written twice around the crash carries the same messageId, for receivers to drop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { audienceTopicNames } from '../../src/audiences/records.js';
import { killAll, startDaemon, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const PARTITIONS = 3;
const USERS = 3_000;
const T0 = Date.UTC(2026, 4, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();

describe('audiences survive a SIGKILL of the router mid-stream', () => {
  let tk: Awaited<ReturnType<typeof createTestKafka>>;
  const daemons: Daemon[] = [];
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  const { events, profiles } = audienceTopicNames(prefix);
  const clientId = randomName('aud-crash');
  const expected: string[] = [];
  let file: string;

  const lag = async (groupId: string, topic: string) => {
    const ends = await tk.admin.fetchTopicOffsets(topic);
    const [committed] = await tk.admin.fetchOffsets({ groupId, topics: [topic] });
    return topicLag(ends, committed?.partitions ?? []);
  };
  const total = async (topic: string) => (await tk.admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);

  beforeAll(async () => {
    tk = await createTestKafka();
    file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: PARTITIONS },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', destinations: ['main'] }],
      destinations: [
        { id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/main' }] } },
        { id: 'aud', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/aud' }] } },
      ],
      audiences: [
        { name: 'Pro Users', sources: ['web'], destinations: ['aud'], rule: { trait: 'plan', equals: 'pro' } },
        { name: 'Buyers', sources: ['web'], destinations: ['aud'], rule: { event: 'Order Completed', atLeast: 3 } },
      ],
    });
    await tk.createTopic(names.calls, PARTITIONS);
    const calls: { key: string; value: string; headers: Record<string, string> }[] = [];
    for (let i = 0; i < USERS; i++) {
      const userId = `u-${i}`;
      const pro = i % 3 === 0;
      const orders = i % 5;
      calls.push({ key: userId, value: JSON.stringify({ type: 'identify', userId, traits: { plan: pro ? 'pro' : 'free' }, timestamp: iso(T0) }), headers: { 'source-id': 'web' } });
      for (let j = 0; j < orders; j++) {
        calls.push({ key: userId, value: JSON.stringify({ type: 'track', userId, event: 'Order Completed', timestamp: iso(T0 + j) }), headers: { 'source-id': 'web' } });
      }
      if (pro) expected.push(`${userId} pro_users true`);
      if (orders >= 3) expected.push(`${userId} buyers true`);
    }
    expected.sort();
    for (let start = 0; start < calls.length; start += 2_000) await tk.produce(names.calls, calls.slice(start, start + 2_000));
  });

  afterAll(async () => {
    await killAll(daemons);
    await tk?.close();
  });

  it('loses no membership change and re-syncs nobody', async () => {
    const first = startDaemon(['router', '--config', file]);
    daemons.push(first);
    // Killed as soon as the audience processor has written its first profiles: some
    // partitions then have changes announced and recorded, others announced only.
    await waitFor(async () => (await tk.admin.listTopics()).includes(profiles) && (await total(profiles)) > 0, {
      timeoutMs: 60_000,
      intervalMs: 20,
      what: `the first profiles in the changelog; router output:\n${first.output().slice(-2000)}`,
    });
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const announcedAtKill = await total(names.deliveries('aud'));
    // The kill landed mid-stream (else this proves nothing).
    expect(announcedAtKill).toBeLessThan(expected.length);
    expect((await lag(`${prefix}router`, names.calls)) + (await lag(`${prefix}audiences`, events))).toBeGreaterThan(0);

    // NOTE: the new process joins both groups only once the killed member's session
    // has timed out (10 s): that wait is most of this test's time.
    const second = await startRole('router', file);
    daemons.push(second);
    /** A wait that failed says where each group stands and what the new process logged. */
    const orExplain = async (error: Error) => {
      const where = async (groupId: string, topic: string) => ({ ends: await tk.admin.fetchTopicOffsets(topic), committed: await tk.admin.fetchOffsets({ groupId, topics: [topic] }) });
      const state = { router: await where(`${prefix}router`, names.calls), audiences: await where(`${prefix}audiences`, events) };
      throw new Error(`${error.message}\nwhere the groups stand: ${JSON.stringify(state)}\nthe new process's output:\n${second.output().slice(-3000)}`);
    };
    await waitFor(async () => (await lag(`${prefix}router`, names.calls)) === 0, { timeoutMs: 45_000, what: 'the router to finish the calls' }).catch(orExplain);
    await waitFor(async () => (await lag(`${prefix}audiences`, events)) === 0, { timeoutMs: 45_000, what: 'the audience processor to finish' }).catch(orExplain);

    const messages = await tk.readAll(names.deliveries('aud'));
    const byId = new Map<string, string>();
    for (const m of messages) {
      const body = JSON.parse(m.text) as { userId: string; messageId: string; traits: Record<string, boolean> };
      const line = `${body.userId} ${Object.entries(body.traits).map(([k, v]) => `${k} ${v}`).join()}`;
      expect(byId.get(body.messageId) ?? line).toBe(line);
      byId.set(body.messageId, line);
    }
    // Every change is there, each under exactly one messageId: nothing lost, no re-sync.
    expect([...byId.values()].sort()).toEqual(expected);
    // Duplicates (the same messageId twice) are allowed around the crash, and few.
    expect(messages.length - byId.size).toBeLessThan(expected.length);
    // The second process restored what the first had recorded.
    const restored = second.logs.filter((l) => l.msg === 'audience profiles restored').reduce((n, l) => n + Number(l.profiles), 0);
    expect(restored).toBeGreaterThan(0);
  });
});
