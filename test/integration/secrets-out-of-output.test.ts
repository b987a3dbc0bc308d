// Secrets stay out of everything Switchyard prints (docs/operations.md#security): a
// webhook URL with secrets in its user info, path and query, a shared secret with
// characters JSON escapes, and a write key reach neither the logs (debug level), nor the
// dead letter's `error` header, nor `check-config`'s output. The URL is printed as its
// index and origin. Against the run's broker and a local receiver that answers 400.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCheckConfig } from '../../src/config/check-config.js';
import { secretsOf } from '../../src/config/mask.js';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const USER = 'usertoken-1a2b';
const PASSWORD = 'url-password-3c4d';
const PATH_SECRET = 'PATHSECRET-5e6f';
const QUERY_SECRET = 'QUERYSECRET-7a8b';
const SHARED_SECRET = 'shared-"quoted"\\secret-9c0d';
const WRITE_KEY = 'write-key-secret-1e2f';
/** Each secret, and the form JSON gives the shared secret (what a log line would hold). */
const SECRETS = [USER, PASSWORD, PATH_SECRET, QUERY_SECRET, SHARED_SECRET, JSON.stringify(SHARED_SECRET).slice(1, -1), WRITE_KEY, 'secret-9c0d'];

const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Secret Test"}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let service: Service;
let shape: Record<string, unknown>;
let config: Config;
let prefix: string;
const logs: string[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
  receiver.reply({ status: 400 });
  prefix = randomPrefix();
  const port = new URL(receiver.url()).port;
  shape = {
    kafka: { brokers: testBrokers(), clientId: randomName('secrets'), topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '2s', retryTiers: ['200ms'], maxRetryWindow: '30s' },
    sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
    destinations: [
      {
        id: 'hooks',
        type: 'webhooks',
        settings: {
          sharedSecret: SHARED_SECRET,
          webhooks: [{ url: `http://${USER}:${PASSWORD}@127.0.0.1:${port}/services/${PATH_SECRET}?sig=${QUERY_SECRET}` }],
        },
      },
    ],
  };
  config = testConfig(shape, 'secrets-out-of-output.yaml');
  const secrets = secretsOf(config);
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: 'debug', secrets: () => secrets, destination: sink });
  service = createDelivererService(
    { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger },
    { sampleIntervalMs: 60_000 },
  );
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join its group' });
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await kafka?.close();
});

describe('secrets out of what Switchyard prints', () => {
  it('the dead letter names the URL by index and origin, and no log line holds a secret', async () => {
    await kafka.produce(`${prefix}deliveries.hooks`, [
      { key: 'u-1', value: body('s-1'), headers: { 'source-id': 'web', 'message-id': 's-1', attempt: '0', 'first-attempt-at': '' } },
    ]);
    const [dead] = await kafka.readAll(`${prefix}deliveries.hooks.dlq`, { atLeast: 1, timeoutMs: 30_000 });
    // The request itself went to the URL as configured, credentials and all.
    expect(receiver.requests[0]?.path).toBe(`/services/${PATH_SECRET}?sig=${QUERY_SECRET}`);
    expect(dead!.headers.error).toBe(`webhooks[0] http://127.0.0.1:${new URL(receiver.url()).port}: 400 Bad Request`);
    await waitFor(() => logs.some((line) => line.includes('event dead-lettered')), { timeoutMs: 10_000, what: 'the dead-letter log line' });
    const text = [...logs, ...Object.values(dead!.headers)].join('\n');
    for (const secret of SECRETS) expect(text, secret).not.toContain(secret);
  });

  it('check-config prints neither the URL’s secrets nor the secret values', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-secrets-'));
    try {
      const file = join(dir, 'switchyard.yaml');
      writeFileSync(file, stringify(shape));
      const out: string[] = [];
      expect(runCheckConfig(file, {}, (line) => out.push(line), (line) => out.push(line))).toBe(0);
      const text = out.join('\n');
      expect(text).toContain('url: http://127.0.0.1:');
      for (const secret of SECRETS) expect(text, secret).not.toContain(secret);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
