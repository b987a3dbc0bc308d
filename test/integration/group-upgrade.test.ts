// The upgrade from the consumer group names of older versions (`<clientId>-router`,
// `<clientId>-audiences`, `<clientId>-deliverer`) to the deployment's own
// (`<groupPrefix>router`, …): the new groups carry the old ones' commits over once, so
// a deployment upgraded mid-stream delivers every call exactly once.
//
// NOTE: the old version is this one with `kafka.groupPrefix: "<clientId>-"`, whose
// groups are exactly the old names; the upgrade drops that key (the prefix becomes the
// topic prefix) and restarts.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import type { Config } from '../../src/config/schema.js';
import { createLogger } from '../../src/observability/logger.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { staysQuiet, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const CALLS_PER_PHASE = 100;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
  // Slow enough that deliveries are in flight when the old version stops.
  // NOTE: 200 ms, 8 in flight: about 40 calls a second, so that the old version is
  // stopped mid-stream (at 30 ms, 266 a second, the consumer engine delivered all 100 of
  // the first phase before the stop took hold).
  receiver.reply({ status: 200, delayMs: 200 });
});

afterAll(async () => {
  await receiver?.close();
  await kafka?.close();
});

function configOf(prefix: string, clientId: string, groupPrefix?: string): Config {
  return testConfig({
    kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 3, ...(groupPrefix === undefined ? {} : { groupPrefix }) },
    delivery: { retryTiers: ['1s'], maxRetryWindow: '1m', concurrencyPerDestination: 8 },
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/hook') }] } }],
  });
}

/** The router (with the audience processor) and the deliverer, as `switchyard all` runs them, logging to `lines`. */
async function startRoles(config: Config, lines: string[]): Promise<Service[]> {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const deps = testRoleDeps(config, { logger: createLogger({ level: 'info', destination: sink }) });
  const services = [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps)];
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'every role to be ready' });
  return services;
}

async function stopRoles(services: readonly Service[]): Promise<void> {
  for (const service of [...services].reverse()) await service.stop();
}

async function produceCalls(prefix: string, from: number, count: number): Promise<void> {
  const messages = Array.from({ length: count }, (_, i) => {
    const n = from + i;
    return { key: `u-${n % 17}`, value: JSON.stringify({ type: 'track', userId: `u-${n % 17}`, event: 'Upgraded', messageId: `m-${n}` }), headers: { 'source-id': 'web' } };
  });
  await kafka.produce(`${prefix}calls`, messages);
}

async function committed(groupId: string, topic: string): Promise<Map<number, string>> {
  const [offsets] = await kafka.admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map((offsets?.partitions ?? []).map((p) => [p.partition, p.offset]));
}

const deliveredIds = () => receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);

describe('upgrade from the <clientId>-* consumer group names', () => {
  it('continues mid-stream from the old groups\' commits: every call delivered once, none skipped', async () => {
    const prefix = randomPrefix();
    const clientId = randomName('upgrade');
    const oldLines: string[] = [];
    const newLines: string[] = [];

    // The old version: its groups are <clientId>-router, -audiences, -deliverer.
    const old = await startRoles(configOf(prefix, clientId, `${clientId}-`), oldLines);
    await produceCalls(prefix, 0, CALLS_PER_PHASE);
    await waitFor(() => receiver.requests.length >= 30, { what: 'the old version to deliver some of the first calls' });
    await stopRoles(old);
    const deliveredByOld = receiver.requests.length;
    // Stopped mid-stream: some calls of the first phase were left for the new version.
    expect(deliveredByOld).toBeLessThan(CALLS_PER_PHASE);
    const oldAudiences = await committed(`${clientId}-audiences`, `${prefix}audience.events`);
    expect([...oldAudiences.values()].some((offset) => Number(offset) > 0)).toBe(true);

    // Calls keep arriving while no version runs; then the new version starts.
    await produceCalls(prefix, CALLS_PER_PHASE, CALLS_PER_PHASE);
    const upgraded = await startRoles(configOf(prefix, clientId), newLines);
    try {
      await waitFor(() => new Set(deliveredIds()).size === 2 * CALLS_PER_PHASE, { timeoutMs: 60_000, what: `all ${2 * CALLS_PER_PHASE} calls delivered` });
      // Everything committed in the new groups, and nothing more arrives.
      await waitFor(async () => [...(await committed(`${prefix}router`, `${prefix}calls`)).values()].reduce((sum, o) => sum + Math.max(0, Number(o)), 0) === 2 * CALLS_PER_PHASE, {
        what: 'the new router group to commit every call',
      });
      expect(await staysQuiet(receiver, 1_500)).toBe(true);
    } finally {
      await stopRoles(upgraded);
    }

    const ids = deliveredIds();
    expect(ids).toHaveLength(2 * CALLS_PER_PHASE);
    expect(new Set(ids).size).toBe(2 * CALLS_PER_PHASE);

    // Each new group said where it started from; the audience processor's too.
    const carriedFrom = (group: string) => newLines.some((line) => line.includes(`from the commits of ${group}`));
    expect(carriedFrom(`${clientId}-router`)).toBe(true);
    expect(carriedFrom(`${clientId}-audiences`)).toBe(true);
    expect(carriedFrom(`${clientId}-deliverer`)).toBe(true);
    const newAudiences = await committed(`${prefix}audiences`, `${prefix}audience.events`);
    for (const [partition, offset] of oldAudiences) expect(BigInt(newAudiences.get(partition) ?? '-1')).toBeGreaterThanOrEqual(BigInt(offset));
  });
});
