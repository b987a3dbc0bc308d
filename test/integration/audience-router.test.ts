// Audiences end to end through the real `switchyard router` (child processes): calls
// on `calls` → router → audience.events → audience processor → identifies on the
// audience's delivery topic. The same calls give the same identifies whether the
// producers keyed them by user or at random, and whether one router or two share
// the partitions; a deletion request erases the user's audience state.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { audienceTopicNames } from '../../src/audiences/records.js';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

const PARTITIONS = 3;
const USERS = 120;
const T0 = Date.UTC(2026, 4, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();

interface Call {
  userId: string;
  value: string;
}

/**
 * Phase 1: every user identifies with a plan (a third "pro") and orders 0–4 times.
 * Phase 2: half of the pro users change to "free", with a later timestamp.
 * Expected identifies: pro users enter pro_users, users with 3+ orders enter
 * buyers (once each), and the changed users leave pro_users.
 */
function scenario(): { phase1: Call[]; phase2: Call[]; expected: string[]; freeAfterPhase2: string[] } {
  const phase1: Call[] = [];
  const phase2: Call[] = [];
  const expected: string[] = [];
  const freeAfterPhase2: string[] = [];
  for (let i = 0; i < USERS; i++) {
    const userId = `u-${i}`;
    const pro = i % 3 === 0;
    phase1.push({ userId, value: JSON.stringify({ type: 'identify', userId, traits: { plan: pro ? 'pro' : 'free' }, timestamp: iso(T0 + i) }) });
    const orders = i % 5;
    for (let j = 0; j < orders; j++) {
      phase1.push({ userId, value: JSON.stringify({ type: 'track', userId, event: 'Order Completed', timestamp: iso(T0 + 1_000 + j) }) });
    }
    if (pro) expected.push(`${userId} pro_users true`);
    if (orders >= 3) expected.push(`${userId} buyers true`);
    if (pro && i % 2 === 0) {
      phase2.push({ userId, value: JSON.stringify({ type: 'identify', userId, traits: { plan: 'free' }, timestamp: iso(T0 + 10_000) }) });
      expected.push(`${userId} pro_users false`);
    }
    if (!pro || i % 2 === 0) freeAfterPhase2.push(userId);
  }
  return { phase1, phase2, expected: expected.sort(), freeAfterPhase2 };
}

/** One prefix, one config, its router processes. */
class World {
  readonly prefix = randomPrefix();
  readonly clientId = randomName('aud');
  readonly names = topicNames(this.prefix);
  readonly audienceTopics = audienceTopicNames(this.prefix);
  readonly file: string;
  readonly daemons: Daemon[] = [];

  constructor(
    readonly tk: TestKafka,
    readonly keyedBy: 'user' | 'random',
  ) {
    this.file = writeConfigFile(this.configWith([]));
  }

  configWith(moreAudiences: unknown[]): unknown {
    return {
      kafka: { brokers: testBrokers(), clientId: this.clientId, topicPrefix: this.prefix, partitions: PARTITIONS },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', destinations: ['main'] }],
      destinations: [
        { id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/main' }] } },
        { id: 'aud', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/aud' }] } },
      ],
      audiences: [
        { name: 'Pro Users', sources: ['web'], destinations: ['aud'], rule: { trait: 'plan', equals: 'pro' } },
        { name: 'Buyers', sources: ['web'], destinations: ['aud'], rule: { event: 'Order Completed', atLeast: 3 } },
        ...moreAudiences,
      ],
    };
  }

  async startRouter(): Promise<void> {
    this.daemons.push(await startRole('router', this.file));
  }

  async produce(calls: Call[]): Promise<void> {
    await this.tk.produce(
      this.names.calls,
      calls.map((c) => ({ key: this.keyedBy === 'user' ? c.userId : randomBytes(6).toString('hex'), value: c.value, headers: { 'source-id': 'web' } })),
    );
  }

  private async lag(groupId: string, topic: string): Promise<number> {
    const ends = await this.tk.admin.fetchTopicOffsets(topic);
    const [committed] = await this.tk.admin.fetchOffsets({ groupId, topics: [topic] });
    return topicLag(ends, committed?.partitions ?? []);
  }

  /**
   * Waits until the router has committed every call (so every audience record is
   * written) and then the audience processor every audience record (so every
   * identify is written): after that nothing more arrives.
   */
  async drained(): Promise<void> {
    await waitFor(async () => (await this.lag(`${this.prefix}router`, this.names.calls)) === 0, {
      timeoutMs: 45_000,
      what: `the router to commit every call in ${this.names.calls}`,
    });
    await waitFor(async () => (await this.lag(`${this.prefix}audiences`, this.audienceTopics.events)) === 0, {
      timeoutMs: 45_000,
      what: `the audience processor to commit every record in ${this.audienceTopics.events}`,
    });
  }

  /** The identifies on the audience destination, one per messageId, as "user trait value". */
  async identifies(): Promise<string[]> {
    return summarize(await this.tk.readAll(this.names.deliveries('aud')));
  }

  stopAll(): Promise<unknown> {
    return Promise.all(
      this.daemons.map((d) => {
        d.kill('SIGTERM');
        return d.exited;
      }),
    );
  }
}

function summarize(messages: ReadMessage[]): string[] {
  const byId = new Map<string, string>();
  for (const m of messages) {
    const body = JSON.parse(m.text) as { userId: string; messageId: string; traits: Record<string, boolean> };
    const [[trait, value]] = Object.entries(body.traits) as [[string, boolean]];
    const line = `${body.userId} ${trait} ${value}`;
    // A messageId stands for one change: the same id must always carry the same change.
    expect(byId.get(body.messageId) ?? line).toBe(line);
    expect(m.key).toBe(body.userId);
    byId.set(body.messageId, line);
  }
  return [...byId.values()].sort();
}

describe('audiences through the router', () => {
  let tk: TestKafka;
  const { phase1, phase2, expected, freeAfterPhase2 } = scenario();
  let keyed: World;
  let random: World;
  let twins: World;

  beforeAll(async () => {
    tk = await createTestKafka();
    keyed = new World(tk, 'user');
    random = new World(tk, 'random');
    twins = new World(tk, 'random');
    // Both twins run before any call exists, so the groups split the partitions between them.
    await Promise.all([keyed.startRouter(), random.startRouter(), twins.startRouter(), twins.startRouter()]);
    for (const world of [keyed, random, twins]) await world.produce(phase1);
    for (const world of [keyed, random, twins]) await world.drained();
    for (const world of [keyed, random, twins]) await world.produce(phase2);
    for (const world of [keyed, random, twins]) await world.drained();
  }, 120_000);

  afterAll(async () => {
    await Promise.all([keyed, random, twins].map((w) => w?.stopAll()));
    await tk?.close();
  });

  it('announces exactly the membership changes of the calls, when producers key calls by user', async () => {
    expect(await keyed.identifies()).toEqual(expected);
  });

  it('gives the same identifies when producers key calls at random', async () => {
    // (Runs before the reload test below adds an audience to this world.)
    expect(await random.identifies()).toEqual(expected);
  });

  it('gives the same identifies with two routers sharing the partitions', async () => {
    const assigned = () => twins.daemons.map((d) => d.logs.filter((l) => l.msg === 'audience partitions assigned').at(-1)?.partitions as number[] | undefined);
    // Each twin holds some audience partitions (else one did all the work and this proves
    // nothing). NOTE: waited for: on a busy machine the second twin's join may still be
    // settling when the test starts.
    await waitFor(() => assigned().every((p) => (p?.length ?? 0) > 0), { timeoutMs: 30_000, what: 'each twin to hold some audience partitions' });
    expect(await twins.identifies()).toEqual(expected);
  });

  it('a new audience added to the config file syncs every current member exactly once', async () => {
    const daemon = random.daemons[0]!;
    const reevaluated = () => daemon.logs.filter((l) => l.msg === 'audiences re-evaluated after the config change');
    expect(reevaluated()).toEqual([]);
    writeConfigFile(random.configWith([{ name: 'Free Users', sources: ['web'], destinations: ['aud'], rule: { trait: 'plan', equals: 'free' } }]), random.file);
    // One line once every partition's re-evaluation is published: then nothing more comes.
    const done = await waitFor(() => reevaluated()[0], { timeoutMs: 30_000, what: 'the partitions to be re-evaluated after the reload' });
    expect(done.partitions).toBe(PARTITIONS);
    const free = (await random.identifies()).filter((line) => line.includes('free_users'));
    expect(free).toEqual(freeAfterPhase2.map((userId) => `${userId} free_users true`).sort());
    // Exactly once: one message per member, none repeated under the same id either.
    const raw = (await tk.readAll(random.names.deliveries('aud'))).filter((m) => m.text.includes('free_users'));
    expect(raw).toHaveLength(freeAfterPhase2.length);
  });

  it('a deletion request: delete bodies go out, the audience state is erased, a later identify starts from nothing', async () => {
    // u-3 is pro (and stays so) and has 3 orders: in both audiences.
    expect(expected).toEqual(expect.arrayContaining(['u-3 pro_users true', 'u-3 buyers true']));
    const requestedAt = '2026-05-02T08:00:00.000Z';
    await tk.produce(keyed.names.deletions, [{ key: 'u-3', value: `{"userId":"u-3","requestedAt":"${requestedAt}"}` }]);
    const deleted = await waitFor(
      async () => (await tk.readAll(keyed.names.deliveries('main'))).find((m) => m.text.includes('"type":"delete"')),
      { timeoutMs: 30_000, what: 'the delete body on the main destination' },
    );
    expect(deleted.text).toBe(`{"type":"delete","userId":"u-3","timestamp":"${requestedAt}"}`);
    // The request names no source: the audience processor sent it to the sources that
    // have seen u-3 and then erased u-3, the seen sources last (a tombstone).
    await waitFor(async () => (await tk.readAll(keyed.audienceTopics.userSources)).find((m) => m.key === 'u-3' && m.value === null), {
      timeoutMs: 30_000,
      what: 'the audience processor to erase u-3',
    });
    // The processor's line about it names the user by a hash only (no personal data at info).
    const done = await waitFor(() => keyed.daemons.flatMap((d) => d.logs).find((l) => typeof l.msg === 'string' && l.msg.startsWith('deletion request done')), {
      what: 'the processor to log the deletion',
    });
    expect(done.userHash).toBe(createHash('sha256').update('u-3').digest('hex').slice(0, 16));
    expect(JSON.stringify(keyed.daemons.flatMap((d) => d.logs).filter((l) => l.level === 30))).not.toContain('"u-3"');

    // Had the state survived, neither call would announce anything (u-3 is a member of
    // both already, with 3+ orders). Erased, the identify is an entry again and one
    // order is far from three.
    await keyed.produce([
      { userId: 'u-3', value: JSON.stringify({ type: 'identify', userId: 'u-3', traits: { plan: 'pro' }, timestamp: iso(T0 + 20_000) }) },
      { userId: 'u-3', value: JSON.stringify({ type: 'track', userId: 'u-3', event: 'Order Completed', timestamp: iso(T0 + 20_001) }) },
    ]);
    await keyed.drained();
    const messages = await tk.readAll(keyed.names.deliveries('aud'));
    const u3 = messages.filter((m) => m.key === 'u-3').map((m) => JSON.parse(m.text) as { messageId: string; traits: Record<string, boolean> });
    // Keyed by user, u-3's calls keep their order: the entries of phase 1, then the re-entry.
    expect(u3.map((b) => JSON.stringify(b.traits))).toEqual(['{"pro_users":true}', '{"buyers":true}', '{"pro_users":true}']);
    expect(new Set(u3.map((b) => b.messageId)).size).toBe(3);
  });
});
