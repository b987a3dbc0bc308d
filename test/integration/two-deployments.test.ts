// Two deployments on one Kafka cluster, told apart only by `kafka.topicPrefix` (both keep
// the default clientId, as a new user would): each `switchyard all` delivers exactly
// its own calls, once, none of the other's, and both stay ready. Before consumer groups
// belonged to the deployment, both joined `switchyard-router`, `switchyard-deliverer`, …
// and each consumed partitions of the other's topics (5 of 20 and 0 of 20 delivered).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const CALLS = 200;

interface Deployment {
  name: string;
  writeKey: string;
  receiver: Receiver;
  daemon: Daemon;
  gatewayPort: number;
  adminPort: number;
}

const daemons: Daemon[] = [];
const receivers: Receiver[] = [];

afterAll(async () => {
  await killAll(daemons);
  for (const receiver of receivers) await receiver.close();
});

async function startDeployment(name: string): Promise<Deployment> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const writeKey = randomName(`wk-${name}`);
  const file = writeConfigFile({
    // No clientId: both deployments keep the default.
    kafka: { brokers: testBrokers(), topicPrefix: randomPrefix(), partitions: 3 },
    gateway: { port: 0, host: '127.0.0.1' },
    admin: { port: 0, host: '127.0.0.1' },
    delivery: { retryTiers: ['1s'], maxRetryWindow: '1m' },
    sources: [{ id: 'web', writeKey, destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url(`/${name}`) }] } }],
  });
  const daemon = await startRole('all', file);
  daemons.push(daemon);
  const gatewayPort = (await daemon.waitForLog((line) => line.msg === 'gateway listening', 'the gateway port')).port as number;
  const adminPort = (await daemon.waitForLog((line) => line.msg === 'admin server listening', 'the admin port')).port as number;
  return { name, writeKey, receiver, daemon, gatewayPort, adminPort };
}

async function readyz(deployment: Deployment): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${deployment.adminPort}/readyz`);
  return { status: response.status, body: await response.text() };
}

/** Polls /readyz of the deployments every 250 ms from the moment each is added, keeping every answer that was not 200. */
class ReadinessWatch {
  readonly unready: string[] = [];
  private readonly watched: Deployment[] = [];
  private readonly timer = setInterval(() => void this.poll(), 250);

  add(deployment: Deployment): void {
    this.watched.push(deployment);
  }

  private async poll(): Promise<void> {
    for (const deployment of this.watched) {
      const { status, body } = await readyz(deployment).catch((error: unknown) => ({ status: 0, body: String(error) }));
      if (status !== 200) this.unready.push(`${deployment.name}: ${status} ${body}`);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

async function sendCalls(deployment: Deployment): Promise<void> {
  const batch = Array.from({ length: CALLS }, (_, i) => ({ type: 'track', userId: `u-${i % 23}`, event: 'Shared Cluster', messageId: `${deployment.name}-${i}` }));
  const response = await fetch(`http://127.0.0.1:${deployment.gatewayPort}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${deployment.writeKey}:`).toString('base64')}` },
    body: JSON.stringify({ batch }),
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ success: true });
}

const deliveredIds = (deployment: Deployment) => deployment.receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);

describe('two deployments on one cluster, different topic prefixes, the same default clientId', () => {
  const watch = new ReadinessWatch();
  let staging: Deployment;
  let production: Deployment;

  beforeAll(async () => {
    staging = await startDeployment('staging');
    await waitFor(async () => (await readyz(staging)).status === 200, { timeoutMs: 60_000, what: 'staging to be ready' });
    // From here on staging must stay ready, while the second deployment joins too.
    watch.add(staging);
    production = await startDeployment('production');
    await waitFor(async () => (await readyz(production)).status === 200, { timeoutMs: 60_000, what: 'production to be ready' });
    watch.add(production);
  }, 240_000);

  afterAll(() => watch.stop());

  it('each delivers its own 200 calls exactly once and none of the other\'s, both ready throughout', async () => {
    await Promise.all([sendCalls(staging), sendCalls(production)]);
    for (const deployment of [staging, production]) {
      await waitFor(() => new Set(deliveredIds(deployment)).size >= CALLS, {
        timeoutMs: 60_000,
        what: `${deployment.name}'s ${CALLS} calls delivered (so far ${new Set(deliveredIds(deployment)).size})`,
      });
    }
    // Nothing more arrives late (a duplicate, or the other deployment's).
    await waitFor(
      async () => {
        const before = staging.receiver.requests.length + production.receiver.requests.length;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        return staging.receiver.requests.length + production.receiver.requests.length === before;
      },
      { timeoutMs: 30_000, what: 'the receivers to go quiet' },
    );
    watch.stop();

    for (const deployment of [staging, production]) {
      const ids = deliveredIds(deployment);
      expect(ids.filter((id) => !id.startsWith(`${deployment.name}-`)), `${deployment.name} got the other's calls`).toEqual([]);
      expect(ids, `${deployment.name}: every call once`).toHaveLength(CALLS);
      expect(new Set(ids).size).toBe(CALLS);
      expect(deployment.receiver.requests.every((r) => r.path === `/${deployment.name}`)).toBe(true);
      // Its groups are its own: no member was handed another deployment's partitions.
      expect(deployment.daemon.logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('which it does not read'))).toEqual([]);
    }
    expect(watch.unready).toEqual([]);
  }, 180_000);
});
