// The audience processor in-process against the real broker: records written to
// `audience.events` as the router writes them, identifies read back from the
// destination's delivery topic. One partition per topic, so that a "marker" record
// (a user entering the Markers audience) is processed after everything produced or
// queued before it: once its identify is there, the absence of others is a fact.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCallBytes } from '../../src/calls/index.js';
import type { Config } from '../../src/config/schema.js';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { createAudienceService } from '../../src/audiences/audience-service.js';
import type { AudienceService } from '../../src/audiences/audience-service.js';
import { audienceCallMessage, audienceTopicNames } from '../../src/audiences/records.js';
import { mutableStore, testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

const markers = { name: 'Markers', sources: ['web'], destinations: ['hooks'], rule: { trait: 'marker', exists: true } };
const proUsers = { name: 'Pro Users', sources: ['web'], destinations: ['hooks', 'off'], rule: { trait: 'plan', in: ['pro', 'enterprise'] } };
const buyers = { name: 'Buyers', sources: ['web'], destinations: ['hooks'], rule: { event: 'Order Completed', atLeast: 3 } };

function loadConfig(prefix: string, clientId: string, audiences: unknown[]): Config {
  return testConfig(
    {
      kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 1 },
      sources: [
        { id: 'web', destinations: ['hooks'] },
        { id: 'app', destinations: ['hooks'] },
      ],
      destinations: [
        { id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } },
        { id: 'off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: 'http://127.0.0.1:9/off' }] } },
      ],
      audiences,
    },
    'audiences.test.yaml',
  );
}


interface Identify {
  userId?: string;
  anonymousId?: string;
  messageId: string;
  timestamp: string;
  traits: Record<string, boolean>;
}

/** One audience's test world: its prefix, config store, the processors it started. */
class World {
  readonly prefix = randomPrefix();
  readonly clientId = randomName('aud');
  readonly store: ReturnType<typeof mutableStore>;
  readonly metrics: Metrics = createMetrics({ defaultMetrics: false });
  readonly services: AudienceService[] = [];
  private markersSent = 0;

  constructor(
    readonly tk: TestKafka,
    audiences: unknown[],
  ) {
    this.store = mutableStore(this.config(audiences));
  }

  config(audiences: unknown[]): Config {
    return loadConfig(this.prefix, this.clientId, [markers, ...audiences]);
  }

  get hooksTopic(): string {
    return topicNames(this.prefix).deliveries('hooks');
  }

  async start(): Promise<AudienceService> {
    const config = this.store.current();
    const service = createAudienceService(
      { config: this.store, kafka: createKafka(config.kafka, silentLogger()), metrics: this.metrics, logger: silentLogger() },
      { sweepIntervalMs: 100 },
    );
    this.services.push(service);
    await service.start();
    await waitFor(() => service.health().ready, { timeoutMs: 30_000, what: 'the audience processor to be ready' });
    return service;
  }

  /** Writes calls (JSON texts) to audience.events as the router does for source `web`. */
  async calls(texts: string[], sourceId = 'web'): Promise<void> {
    const messages = texts.map((text) => {
      const parsed = parseCallBytes(Buffer.from(text));
      if (!parsed.ok) throw new Error(parsed.error);
      const { key, value } = audienceCallMessage(parsed.call, sourceId, Date.now());
      return { key: key.toString('utf8'), value };
    });
    await this.tk.produce(audienceTopicNames(this.prefix).events, messages);
  }

  /**
   * Sends a marker user through and returns every identify on the hooks topic up to
   * and including its entry, markers left out.
   */
  async settled(): Promise<Identify[]> {
    const marker = `marker-${++this.markersSent}`;
    await this.calls([identify(marker, { marker: true })]);
    const expected = this.markersSent;
    const read = await waitFor(
      async () => {
        const all = await this.tk.readAll(this.hooksTopic);
        return all.filter((m) => m.key?.startsWith('marker-')).length >= expected ? all : undefined;
      },
      { timeoutMs: 30_000, what: `marker ${marker} on ${this.hooksTopic}` },
    );
    return read.filter((m) => !m.key?.startsWith('marker-')).map(parse);
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.services.map((s) => s.stop()));
  }
}

function parse(message: ReadMessage): Identify {
  return JSON.parse(message.text) as Identify;
}

const identify = (userId: string, traits: Record<string, unknown>, timestamp = new Date().toISOString()) =>
  JSON.stringify({ type: 'identify', userId, traits, timestamp });
const order = (userId: string, timestamp = new Date().toISOString()) => JSON.stringify({ type: 'track', userId, event: 'Order Completed', timestamp });
const summary = (list: Identify[]) => list.map((m) => `${m.userId ?? m.anonymousId} ${JSON.stringify(m.traits)}`);

describe('audience processor (in-process, real broker)', () => {
  let tk: TestKafka;
  const worlds: World[] = [];
  const world = (audiences: unknown[]) => {
    const w = new World(tk, audiences);
    worlds.push(w);
    return w;
  };

  beforeAll(async () => {
    tk = await createTestKafka();
  });
  afterEach(async () => {
    await Promise.all(worlds.splice(0).map((w) => w.stopAll()));
  });
  afterAll(async () => {
    await tk?.close();
  });

  it('sends identify(true) on entering and identify(false) on leaving, with exact bytes and headers', async () => {
    const w = world([proUsers]);
    await w.start();
    await w.calls([identify('u-1', { plan: 'pro' }), identify('u-2', { plan: 'free' })]);
    await w.calls([identify('u-1', { plan: 'pro', name: 'Ada' })]);
    await w.calls([identify('u-1', { plan: 'free' })]);
    const sent = await w.settled();
    expect(summary(sent)).toEqual(['u-1 {"pro_users":true}', 'u-1 {"pro_users":false}']);

    const raw = (await tk.readAll(w.hooksTopic)).filter((m) => m.key === 'u-1');
    const first = raw[0]!;
    const body = parse(first);
    expect(first.text).toBe(`{"version":1,"type":"identify","userId":"u-1","messageId":"${body.messageId}","timestamp":"${body.timestamp}","traits":{"pro_users":true}}`);
    expect(first.headers).toMatchObject({ 'source-id': 'web', 'message-id': body.messageId, attempt: '0', 'first-attempt-at': '' });
    expect(Number(first.headers['received-at'])).toBeGreaterThan(0);
    expect(body.messageId).not.toBe(parse(raw[1]!).messageId);
    // The disabled destination gets nothing.
    expect(await tk.readAll(topicNames(w.prefix).deliveries('off'))).toEqual([]);
    expect(await w.metrics.registry.getSingleMetricAsString('switchyard_audience_changes_total')).toContain('switchyard_audience_changes_total{audience="pro_users",change="left"} 1');
    expect(await w.metrics.registry.getSingleMetricAsString('switchyard_audience_members')).toContain('switchyard_audience_members{audience="pro_users"} 0');
  });

  it('an event-count rule fires once, at the N-th event, and not again', async () => {
    const w = world([buyers]);
    await w.start();
    await w.calls([order('u-1'), order('u-1')]);
    expect(await w.settled()).toEqual([]);
    await w.calls([order('u-1')]);
    expect(summary(await w.settled())).toEqual(['u-1 {"buyers":true}']);
    await w.calls([order('u-1'), order('u-1')]);
    expect(summary(await w.settled())).toEqual(['u-1 {"buyers":true}']);
  });

  it('a user falls out of a `within` window when it passes, with no new event', async () => {
    const w = world([{ name: 'Recent Buyers', sources: ['web'], destinations: ['hooks'], rule: { event: 'Order Completed', atLeast: 2, within: '1500ms' } }]);
    await w.start();
    const at = Date.now();
    await w.calls([order('u-1', new Date(at).toISOString()), order('u-1', new Date(at).toISOString())]);
    const read = await tk.readAll(w.hooksTopic, { atLeast: 2, timeoutMs: 20_000 });
    expect(summary(read.map(parse))).toEqual(['u-1 {"recent_buyers":true}', 'u-1 {"recent_buyers":false}']);
    // Judged on the events' timestamps: the leave is computed once the window has passed.
    expect(Date.parse(parse(read[1]!).timestamp)).toBeGreaterThanOrEqual(at + 1500);
  });

  it('a new audience added by a reload syncs every current member exactly once; a rule edit sends only the changes', async () => {
    const w = world([]);
    await w.start();
    await w.calls([identify('u-1', { plan: 'pro' }), identify('u-2', { plan: 'free' }), identify('u-3', { plan: 'enterprise' })]);
    await w.calls([identify('u-4', { plan: 'pro' })], 'app'); // not a source of the audience
    expect(await w.settled()).toEqual([]);

    w.store.set(w.config([proUsers]));
    expect(summary(await w.settled()).sort()).toEqual(['u-1 {"pro_users":true}', 'u-3 {"pro_users":true}']);
    // A reload that changes nothing about audiences re-sends nothing.
    w.store.set(w.config([proUsers]));
    expect(summary(await w.settled()).sort()).toEqual(['u-1 {"pro_users":true}', 'u-3 {"pro_users":true}']);

    w.store.set(w.config([{ ...proUsers, rule: { trait: 'plan', in: ['pro', 'free'] } }]));
    expect(summary(await w.settled()).slice(2).sort()).toEqual(['u-2 {"pro_users":true}', 'u-3 {"pro_users":false}']);

    // Removing the audience sends nothing.
    w.store.set(w.config([]));
    expect(await w.settled()).toHaveLength(4);
  });

  it('a restart neither forgets nor re-announces: state comes back from the changelog', async () => {
    const w = world([proUsers, buyers]);
    const first = await w.start();
    await w.calls([identify('u-1', { plan: 'pro' }), order('u-2'), order('u-2')]);
    expect(summary(await w.settled())).toEqual(['u-1 {"pro_users":true}']);
    await first.stop();

    await w.start();
    await w.calls([order('u-2')]);
    // u-2's third order counts the two from before the restart; u-1 is not announced again.
    expect(summary(await w.settled())).toEqual(['u-1 {"pro_users":true}', 'u-2 {"buyers":true}']);
  });

  it('an erased user starts from nothing: a later identify enters again, with a new messageId', async () => {
    const w = world([proUsers]);
    const service = await w.start();
    await w.calls([identify('u-1', { plan: 'pro' })]);
    const [entered] = await w.settled();
    await service.eraseUser('u-1');
    await w.calls([identify('u-1', { name: 'no plan any more' })]);
    // Erased: the profile (with its plan) is gone, so this identify alone is not a member.
    expect(summary(await w.settled())).toEqual(['u-1 {"pro_users":true}']);
    await w.calls([identify('u-1', { plan: 'pro' })]);
    const sent = await w.settled();
    expect(summary(sent)).toEqual(['u-1 {"pro_users":true}', 'u-1 {"pro_users":true}']);
    expect(sent[1]?.messageId).not.toBe(entered?.messageId);
  });
});
