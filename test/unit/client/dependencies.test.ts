// The client is used inside producers' own apps: loading it for HTTP must not load
// kafkajs, pino, prom-client or any daemon module (it has its own copy of the call
// model: packages/client/src/call-model.ts). Checked on the package's source in a child
// process whose module loader refuses those; test/integration/client-package.test.ts
// checks the packed package.
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const FORBIDDEN = ['kafkajs', '@platformatic/kafka', 'pino', 'prom-client', 'zod', 'yaml', 'undici'];

const hook = `
const forbidden = ${JSON.stringify(FORBIDDEN)};
const daemon = ${JSON.stringify(pathToFileURL(`${root}src/`).href)};
export async function resolve(specifier, context, next) {
  if (forbidden.includes(specifier)) throw new Error('forbidden import: ' + specifier + ' from ' + context.parentURL);
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith(daemon)) {
    throw new Error('forbidden import: daemon module ' + resolved.url + ' from ' + context.parentURL);
  }
  return resolved;
}`;

/** Runs `body` (ESM) in a child with the refusing loader; resolves to its stdout, rejects with its stderr. */
async function runGuarded(body: string): Promise<string> {
  const script = `
import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
${body}`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, DEBUG: '' },
    timeout: 30_000,
  });
  return stdout;
}

describe('what loading the client loads', () => {
  it('HTTP use loads none of kafkajs, pino, prom-client, zod, yaml, undici or any daemon module', async () => {
    const entry = pathToFileURL(`${root}packages/client/src/index.ts`).href;
    const stdout = await runGuarded(`
const { Analytics } = await import(${JSON.stringify(entry)});
const analytics = new Analytics('wk', { endpoint: 'http://127.0.0.1:9', maxRetries: 0 });
analytics.track({ userId: 'u', event: 'e' });
await analytics.close().catch(() => undefined);
console.log('loaded');`);
    expect(stdout.trim()).toBe('loaded');
  });

  it('(control) the guard does refuse kafkajs', async () => {
    await expect(runGuarded(`await import('kafkajs');`)).rejects.toThrow(/forbidden import: kafkajs/);
  });

  it('(control) the guard does refuse a daemon module', async () => {
    const versionModule = pathToFileURL(`${root}src/version.ts`).href;
    await expect(runGuarded(`await import(${JSON.stringify(versionModule)});`)).rejects.toThrow(/forbidden import: daemon module/);
  });
});
