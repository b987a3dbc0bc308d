// The client package's Kafka transport on @platformatic/kafka (the client it uses when
// kafkajs is not installed, which in this repository it is): the built package in a
// project that has @platformatic/kafka and not kafkajs. It writes a call to the real
// broker, and checks the metadata before each send (packages/client/src/send-guard.ts):
// with its producer's public metadata() answering without the topic (as one did during a
// broker restart), the send fails as retryable and writes nothing.
// docs/kafka.md#the-producers-metadata-check.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
// esbuild: the client package's own build tool (its devDependency), as its build bundles it.
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, randomPrefix, testBrokers } from '../support/kafka.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

const SCRIPT = `
import { subscribe } from 'node:diagnostics_channel';
import { Analytics } from 'switchyard-client';
const [brokers, topic] = process.argv.slice(2);
// The library's producers, through its public diagnostics channel of client creation.
const producers = [];
subscribe('plt:kafka:instances', ({ type, instance }) => { if (type === 'producer') producers.push(instance); });
const analytics = new Analytics('', { kafka: { brokers: brokers.split(','), topic, sourceId: 'web' }, maxRetries: 0, debug: true });
const written = analytics.track({ userId: 'u-1', event: 'Written' });
await analytics.flush();
const producer = producers[0];
const original = producer.metadata.bind(producer);
producer.metadata = async (options) => {
  const answer = await original(options);
  return { ...answer, topics: new Map([...answer.topics].filter(([name]) => name !== topic)) };
};
const refused = analytics.track({ userId: 'u-1', event: 'Refused' });
const failure = await analytics.close().then(() => null, (error) => ({ code: error.code, message: error.message }));
console.log(JSON.stringify({ producers: producers.length, written, refused, failure }));
`;

let work: string;
let kafka: Awaited<ReturnType<typeof createTestKafka>>;

beforeAll(async () => {
  kafka = await createTestKafka();
  // The package's module, bundled from its source as its build does (packages/client/scripts/build.mjs), and
  // @platformatic/kafka, outside the repository so that kafkajs cannot be found.
  work = await mkdtemp(join(tmpdir(), 'switchyard-client-platformatic-'));
  const modules = join(work, 'node_modules');
  await mkdir(join(modules, '@platformatic'), { recursive: true });
  await cp(join(root, 'packages/client/package.json'), join(modules, 'switchyard-client/package.json'));
  const entry = join(root, 'packages/client/src/index.ts');
  const outfile = join(modules, 'switchyard-client/dist/index.js');
  await build({ entryPoints: [entry], outfile, bundle: true, packages: 'external', platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning' });
  await symlink(join(root, 'node_modules/@platformatic/kafka'), join(modules, '@platformatic/kafka'), 'dir');
  await writeFile(join(work, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
  await writeFile(join(work, 'send.mjs'), SCRIPT);
});

afterAll(async () => {
  await kafka?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe("the client package's Kafka transport on @platformatic/kafka", () => {
  it('writes a call; a send whose metadata lacks the topic fails as retryable and writes nothing', async () => {
    const topic = `${randomPrefix()}calls`;
    await kafka.createTopic(topic, 2);
    const { stdout, stderr } = await run(process.execPath, ['send.mjs', testBrokers().join(','), topic], { cwd: work, timeout: 60_000 });
    expect(stderr).toContain('with @platformatic/kafka');
    const out = JSON.parse(stdout) as { producers: number; written: string; refused: string; failure: { code: string; message: string } | null };
    expect(out.producers).toBe(1);
    expect(out.failure).toMatchObject({ code: 'retries_exhausted', message: expect.stringContaining(`no partition leaders for ${topic} `) });
    const messages = await kafka.readAll(topic, { atLeast: 1, settleMs: 1_000 });
    expect(messages.map((m) => (JSON.parse(m.text ?? '{}') as { messageId?: string }).messageId)).toEqual([out.written]);
  });
});
