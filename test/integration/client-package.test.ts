// The client as a user gets it, and as a package that stands alone: packages/client
// copied out of the repository with nothing but its declared dependencies, where its
// own tests run and `npm pack` builds it; the tarball installed into an empty project,
// then used from there (plain Node, and TypeScript against its declarations) to send a
// call to a local HTTP server standing in for the gateway.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const packageDir = join(root, 'packages/client');
const run = promisify(execFile);

/** The environment without the npm_* and VITEST* variables an outer `npm test` sets, so the inner npm acts as a user's would. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_') && !name.startsWith('VITEST')));
}

/** Output without the escape sequences of terminal colours. */
const withoutColors = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

interface PackResult {
  filename: string;
  files: { path: string }[];
}

let work: string;
let alone: string;
let ownTests: { ok: boolean; output: string };
let project: string;
let packed: PackResult;
let receiver: Receiver;
/** What npm printed to stderr while installing the tarball. */
let installOutput: string;
const version = (JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { version: string }).version;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'switchyard-client-pack-'));
  // The package's folder alone, outside the repository (no build, no node_modules), with its declared dependencies.
  alone = join(work, 'switchyard-client');
  await cp(packageDir, alone, { recursive: true, filter: (source) => !/[\\/](node_modules|dist)$/.test(source) });
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], { cwd: alone, env: cleanEnv(), timeout: 240_000 });
  ownTests = await run('npm', ['test'], { cwd: alone, env: { ...cleanEnv(), DEBUG: '' }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ ok: true, output: withoutColors(stdout + stderr) }),
    (error: { stdout?: string; stderr?: string }) => ({ ok: false, output: withoutColors(`${error.stdout ?? ''}${error.stderr ?? String(error)}`) }),
  );
  // npm pack runs the package's prepack script: the build, there, from the copy's source.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: alone,
    env: cleanEnv(),
    timeout: 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  // npm prints the scripts' output before the JSON array.
  packed = (JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1)) as PackResult[])[0] as PackResult;

  project = join(work, 'app');
  await run('mkdir', [project]);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
  ({ stderr: installOutput } = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, packed.filename)], {
    cwd: project,
    env: cleanEnv(),
    timeout: 120_000,
  }));
  receiver = await startReceiver();
  receiver.reply({ status: 200, body: '{"success":true}' });
}, 480_000);

afterAll(async () => {
  await receiver?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe('switchyard-client alone, outside the repository', () => {
  it('holds nothing that reaches outside its folder', async () => {
    const sources = (await readdir(join(alone, 'src'))).filter((name) => name.endsWith('.ts'));
    for (const name of sources) expect(await readFile(join(alone, 'src', name), 'utf8'), name).not.toMatch(/from '\.\.\/|import\('\.\.\//);
    expect(await readFile(join(alone, 'tsconfig.build.json'), 'utf8')).not.toContain('../');
  });

  it('passes its own tests with only its declared dependencies installed', () => {
    expect(ownTests.output).toMatch(/Tests\s+\d+ passed/);
    expect(ownTests.output).not.toMatch(/\d+ failed/);
    expect(ownTests.ok).toBe(true);
  });

  it('builds there: npm pack made the bundle and the declarations from the copy', () => {
    expect(packed.files.map((f) => f.path)).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/analytics.d.ts']));
  });
});

describe('switchyard-client from npm pack, in an empty project', () => {
  it('the tarball holds the bundled module, its declarations, package.json and the licence, nothing else', () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toContain('package.json');
    expect(files).toContain('LICENSE');
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    for (const file of files) expect(file, file).toMatch(/^(package\.json|README\.md|LICENSE|dist\/index\.js|dist\/[a-z-]+\.d\.ts)$/);
  });

  it('installs without a warning (no install script for npm to ask about)', () => {
    expect(installOutput).not.toMatch(/npm warn/i);
  });

  it('installs with no dependency at all (@platformatic/kafka and kafkajs are optional peers)', async () => {
    const lock = JSON.parse(await readFile(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const installed = Object.keys(lock.packages).filter((path) => path !== '');
    expect(installed).toEqual(['node_modules/switchyard-client']);
    const manifest = JSON.parse(await readFile(join(project, 'node_modules/switchyard-client/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.peerDependenciesMeta).toEqual({ '@platformatic/kafka': { optional: true }, kafkajs: { optional: true } });
  });

  it('sends a call over HTTP as the gateway expects it; the Kafka transport says to install a Kafka client', async () => {
    const script = `
import { Analytics, AnalyticsConfigError } from 'switchyard-client';
const analytics = new Analytics('wk-packed-1', { endpoint: process.argv[2], maxRetries: 0 });
const id = analytics.track({ userId: 'u-1', event: 'Installed From Tarball', properties: { n: 1 } });
await analytics.close();
let kafka = 'no error';
try {
  new Analytics('', { kafka: { brokers: ['127.0.0.1:9'], sourceId: 'web' } });
} catch (err) {
  kafka = (err instanceof AnalyticsConfigError ? 'AnalyticsConfigError: ' : 'other: ') + err.message;
}
console.log(JSON.stringify({ id, kafka }));
`;
    await writeFile(join(project, 'send.mjs'), script);
    const { stdout } = await run(process.execPath, ['send.mjs', receiver.url('')], {
      cwd: project,
      env: { ...cleanEnv(), DEBUG: '' },
      timeout: 30_000,
    });
    const out = JSON.parse(stdout) as { id: string; kafka: string };

    expect(receiver.requests).toHaveLength(1);
    const request = receiver.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/batch');
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from('wk-packed-1:').toString('base64')}`);
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    expect(request.headers['user-agent']).toBe(`switchyard-client/${version}`);
    const body = JSON.parse(request.text) as { batch: Record<string, unknown>[]; sentAt: string };
    expect(body.batch).toEqual([
      {
        type: 'track',
        userId: 'u-1',
        messageId: out.id,
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        event: 'Installed From Tarball',
        properties: { n: 1 },
        context: { library: { name: 'switchyard-client', version } },
      },
    ]);

    expect(out.kafka).toMatch(/^AnalyticsConfigError: the Kafka transport needs a Kafka client, .*run `npm install @platformatic\/kafka` \(or `npm install kafkajs`\)/);
  });

  it('its declarations stand alone: a strict TypeScript program type-checks against them (skipLibCheck off)', async () => {
    await writeFile(
      join(project, 'app.ts'),
      `import { Analytics, AnalyticsDeliveryError } from 'switchyard-client';
import type { AnalyticsOptions, KafkaTransportOptions, TrackCall } from 'switchyard-client';

const kafka: KafkaTransportOptions = { brokers: ['k:9092'], sourceId: 'web', sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' }, ssl: true };
const options: AnalyticsOptions = { endpoint: 'http://localhost:8080', onError: (error: AnalyticsDeliveryError) => console.error(error.code, error.calls.length) };
const analytics = new Analytics('wk', options);
const call: TrackCall = { userId: 'u', event: 'e', timestamp: new Date() };
const id: string = analytics.track(call);
// @ts-expect-error track needs an event name
analytics.track({ userId: 'u' });
await analytics.flush();
void kafka;
void id;
`,
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const args = ['--noEmit', '--strict', '--skipLibCheck', 'false', '--target', 'es2022', '--module', 'nodenext'];
    args.push('--moduleResolution', 'nodenext', '--types', 'node', '--typeRoots', join(root, 'node_modules/@types'), 'app.ts');
    const result = await run(process.execPath, [tsc, ...args], { cwd: project, env: cleanEnv(), timeout: 60_000 }).then(
      () => 'ok',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(result).toBe('ok');
  });

  it('type-checks for an HTTP-only user without @types/node (no Node type in its declarations)', async () => {
    const dir = join(project, 'no-node-types');
    await run('mkdir', [dir]);
    await writeFile(
      join(dir, 'app.ts'),
      `import { Analytics } from 'switchyard-client';
import type { AnalyticsOptions, KafkaTlsOptions, TrackCall } from 'switchyard-client';

const options: AnalyticsOptions = { endpoint: 'http://localhost:8080', maxRetries: 2 };
const analytics = new Analytics('wk', options);
const call: TrackCall = { userId: 'u', event: 'e', properties: { total: 1 } };
const id: string = analytics.track(call);
const tls: KafkaTlsOptions = { ca: 'PEM', rejectUnauthorized: true };
await analytics.close();
void id;
void tls;
`,
    );
    // No Node types anywhere: none named, and none under this project's node_modules/@types.
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, skipLibCheck: false, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022'], types: [], noEmit: true },
        files: ['app.ts'],
      }),
    );
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'no-node-types', private: true, type: 'module' }));
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir, env: cleanEnv(), timeout: 60_000 }).then(
      () => 'ok',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(result).toBe('ok');
  });
});
