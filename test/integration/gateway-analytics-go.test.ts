// The seed's own Go client, analytics-go v2 (gopkg.in/segmentio/analytics-go.v2 v2.0.0),
// unchanged, against the gateway: its calls arrive, and its Close() after everything was
// flushed, which sends {"batch":null,…}, gets a 2xx and leaves calls.invalid empty.
// The program is test/support/go-analytics-v2 (the library comes from the Go module
// proxy, or the module cache). Skipped, and says so, when `go` is not on PATH.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const PROGRAM = resolve(import.meta.dirname, '..', 'support', 'go-analytics-v2');
const WRITE_KEY = 'wk-analytics-go-0001';
const CALLS = 5;

const goMissing = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0 ? undefined : 'go is not on PATH';

describe.skipIf(goMissing !== undefined)(goMissing === undefined ? 'gateway with analytics-go v2' : `gateway with analytics-go v2: skipped, ${goMissing}`, () => {
  const prefix = randomPrefix();
  const metrics = createMetrics({ defaultMetrics: false });
  let workDir: string;
  let binary: string;
  let gateway: GatewayService;
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'switchyard-go-client-'));
    binary = join(workDir, 'go-analytics-v2');
    // NOTE: GOFLAGS cleared (a machine-wide -mod=vendor would look for a vendor folder);
    // the module comes from GOPROXY (the public proxy by default) or the module cache.
    const build = spawnSync('go', ['build', '-o', binary, '.'], {
      cwd: PROGRAM,
      encoding: 'utf8',
      timeout: 180_000,
      env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '' },
    });
    if (build.status !== 0) throw new Error(`go build of ${PROGRAM} failed (the module gopkg.in/segmentio/analytics-go.v2 comes from GOPROXY or the module cache):\n${build.stderr}`);
    const config = testConfig(
      {
        kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 2 },
        gateway: { port: 0, host: '127.0.0.1' },
        sources: [{ id: 'go-backend', writeKey: WRITE_KEY, destinations: ['hooks'] }],
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
      },
      'analytics-go.yaml',
    );
    gateway = createGatewayService(testRoleDeps(config, { metrics }));
    await gateway.start();
    kafka = await createTestKafka();
  }, 240_000);

  afterAll(async () => {
    await kafka?.close();
    await gateway?.stop();
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  });

  it('Close() after every call was flushed gets a 2xx, and calls.invalid stays empty', async () => {
    const user = randomName('go-user');
    const child = spawn(binary, [`http://127.0.0.1:${gateway.port()}`, WRITE_KEY, user, String(CALLS)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolveExit) => child.once('close', resolveExit));
    try {
      await waitFor(() => out.includes('queued'), { what: `the Go program to queue its calls; stderr:\n${err}` });
      // The batch flushed (the client's Size): every call is in Kafka before Close().
      const stored = (await kafka.readAll(`${prefix}calls`, { atLeast: CALLS, timeoutMs: 30_000 })).filter((m) => m.key === user);
      expect(stored).toHaveLength(CALLS);
      expect(stored.every((m) => m.headers['source-id'] === 'go-backend')).toBe(true);
      expect(stored.map((m) => (JSON.parse(m.text) as { properties: { n: number } }).properties.n).sort()).toEqual([0, 1, 2, 3, 4]);

      child.stdin.end('close\n');
      expect(await exited).toBe(0);
      expect(out).toContain('closed');
    } finally {
      child.kill();
    }
    // The library's verbose log: the flush and the close, each answered 200, no error.
    expect(err).toContain(`exit requested – flushing 0`);
    expect(err.match(/segment: response 200 OK/g)).toHaveLength(2);
    expect(err).not.toMatch(/segment: response [45]\d\d/);
    const answered = (await metrics.gatewayRequests.get()).values.filter((v) => v.value > 0);
    expect(answered.map((v) => [v.labels.route, v.labels.status, v.value])).toEqual([['/v1/batch', '200', 2]]);
    const invalid = await kafka.admin.fetchTopicOffsets(`${prefix}calls.invalid`);
    expect(invalid.reduce((sum, p) => sum + Number(p.high), 0)).toBe(0);
    expect((await metrics.callsInvalid.get()).values.filter((v) => v.value > 0)).toEqual([]);
  }, 60_000);
});
