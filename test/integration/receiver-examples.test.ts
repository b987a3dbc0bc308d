// The receiver examples in examples/receivers/, each run as a user would run it and
// sent requests signed here, independently of both the examples and Switchyard's own
// signing code. A language whose toolchain is not on PATH is skipped, and says so.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';

const EXAMPLES = resolve(import.meta.dirname, '..', '..', 'examples', 'receivers');

const onPath = (command: string, versionFlag: string) => spawnSync(command, [versionFlag], { stdio: 'ignore' }).status === 0;

interface Language {
  name: string;
  /** Why it is skipped, or undefined when its toolchain is present. */
  missing: string | undefined;
  /** Builds if needed; returns the command that runs the receiver. */
  prepare: (workDir: string) => { command: string; args: string[] };
}

const languages: Language[] = [
  {
    name: 'node',
    missing: undefined,
    prepare: () => ({ command: process.execPath, args: [join(EXAMPLES, 'node', 'receiver.mjs')] }),
  },
  {
    name: 'python',
    missing: onPath('python3', '--version') ? undefined : 'python3 is not on PATH',
    prepare: () => ({ command: 'python3', args: [join(EXAMPLES, 'python', 'receiver.py')] }),
  },
  {
    name: 'go',
    missing: onPath('go', 'version') ? undefined : 'go is not on PATH',
    prepare: (workDir) => {
      // NOTE: built once here rather than `go run` per start, which compiles every time.
      // Stdlib only: no module download, so the proxy is off and the toolchain local.
      const binary = join(workDir, 'receiver');
      // Go keeps its build cache under $HOME; a CI runner without one gets a fresh cache.
      const hasCache = process.env.GOCACHE || process.env.XDG_CACHE_HOME || process.env.HOME;
      const build = spawnSync('go', ['build', '-o', binary, '.'], {
        cwd: join(EXAMPLES, 'go'),
        encoding: 'utf8',
        env: { ...process.env, GOTOOLCHAIN: 'local', GOPROXY: 'off', GOFLAGS: '', ...(!hasCache && { GOCACHE: join(workDir, 'go-cache') }) },
      });
      if (build.status !== 0) throw new Error(`go build failed:\n${build.stderr}`);
      return { command: binary, args: [] };
    },
  },
];

// A Standard Webhooks secret; X-Signature uses the same text as its key.
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const STANDARD_KEY = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
const BODY =
  '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}';
const TAMPERED = BODY.replace('99.5', '9.5');

const xSignature = (body: string, secret = SECRET) => createHmac('sha1', secret).update(body, 'utf8').digest('hex');
const standardSignature = (id: string, seconds: number, body: string, key = STANDARD_KEY) =>
  `v1,${createHmac('sha256', key).update(`${id}.${seconds}.${body}`, 'utf8').digest('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

function standardHeaders(body: string, options: { seconds?: number; signatures?: string[] } = {}): Record<string, string> {
  const seconds = options.seconds ?? nowSeconds();
  return {
    'webhook-id': 'm-1',
    'webhook-timestamp': String(seconds),
    'webhook-signature': (options.signatures ?? [standardSignature('m-1', seconds, body)]).join(' '),
  };
}

describe.each(languages)('$name receiver', (language) => {
  const name = language.missing === undefined ? 'verifies both schemes' : `skipped: ${language.missing}`;

  describe.skipIf(language.missing !== undefined)(name, () => {
    let workDir: string;
    let child: ChildProcess;
    let output = '';
    let url = '';

    beforeAll(async () => {
      workDir = mkdtempSync(join(tmpdir(), `switchyard-receiver-${language.name}-`));
      const { command, args } = language.prepare(workDir);
      child = spawn(command, args, {
        env: { ...process.env, WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      url = await waitFor(() => /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1], {
        timeoutMs: 30_000,
        what: `the ${language.name} receiver to listen (output so far: ${JSON.stringify(output)})`,
      });
    }, 180_000);

    afterAll(() => {
      child?.kill('SIGKILL');
      if (workDir) rmSync(workDir, { recursive: true, force: true });
    });

    const post = (body: string, headers: Record<string, string>) =>
      fetch(`${url}/segment`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

    it('accepts a body signed with X-Signature and prints the event', async () => {
      const response = await post(BODY, { 'x-signature': xSignature(BODY) });
      expect(response.status).toBe(204);
      await waitFor(() => output.includes(`verified by X-Signature: ${BODY}`), { timeoutMs: 5_000, what: 'the event printed' });
    });

    it('accepts a body signed with Standard Webhooks', async () => {
      const response = await post(BODY, standardHeaders(BODY));
      expect(response.status).toBe(204);
      await waitFor(() => output.includes(`verified by Standard Webhooks: ${BODY}`), { timeoutMs: 5_000, what: 'the event printed' });
    });

    it('accepts Standard Webhooks during a rotation, when the second of two signatures matches', async () => {
      const seconds = nowSeconds();
      const otherKey = randomBytes(24);
      const signatures = [standardSignature('m-1', seconds, BODY, otherKey), standardSignature('m-1', seconds, BODY)];
      expect((await post(BODY, standardHeaders(BODY, { seconds, signatures }))).status).toBe(204);
    });

    it.each([
      ['a tampered body under X-Signature', () => ({ body: TAMPERED, headers: { 'x-signature': xSignature(BODY) } })],
      ['a tampered body under Standard Webhooks', () => ({ body: TAMPERED, headers: standardHeaders(BODY) })],
      ['X-Signature made with another secret', () => ({ body: BODY, headers: { 'x-signature': xSignature(BODY, 'another-secret') } })],
      ['X-Signature in upper case hex', () => ({ body: BODY, headers: { 'x-signature': xSignature(BODY).toUpperCase() } })],
      ['a Standard Webhooks signature 10 minutes old', () => ({ body: BODY, headers: standardHeaders(BODY, { seconds: nowSeconds() - 600 }) })],
      ['a Standard Webhooks signature 10 minutes ahead', () => ({ body: BODY, headers: standardHeaders(BODY, { seconds: nowSeconds() + 600 }) })],
      ['a Standard Webhooks signature of another message id', () => ({ body: BODY, headers: { ...standardHeaders(BODY), 'webhook-id': 'm-2' } })],
      ['no signature at all', () => ({ body: BODY, headers: {} })],
    ])('refuses %s with 401', async (_name, request) => {
      const { body, headers } = request();
      const response = await post(body, headers);
      expect(response.status).toBe(401);
      expect(await response.text()).not.toBe('');
    });

    it('prints no refused request as an event', () => {
      expect(output).not.toContain(`verified by X-Signature: ${TAMPERED}`);
      expect(output).not.toContain(`verified by Standard Webhooks: ${TAMPERED}`);
    });
  });
});
