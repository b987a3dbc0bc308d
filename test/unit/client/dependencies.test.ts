// The client is used inside producers' own apps: loading it for HTTP must not load
// kafkajs, pino, prom-client or the daemon's config. Checked in a child process whose
// module loader refuses those packages.
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const FORBIDDEN = ['kafkajs', 'pino', 'prom-client', 'zod', 'yaml', 'undici'];

const hook = `
const forbidden = ${JSON.stringify(FORBIDDEN)};
export async function resolve(specifier, context, next) {
  if (forbidden.includes(specifier) || /\\/src\\/(config|observability|runtime|cli)\\//.test(specifier)) {
    throw new Error('forbidden import: ' + specifier + ' from ' + context.parentURL);
  }
  return next(specifier, context);
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
  it('HTTP use loads none of kafkajs, pino, prom-client, zod, yaml, undici or daemon modules', async () => {
    const entry = pathToFileURL(`${root}src/client/index.ts`).href;
    const stdout = await runGuarded(`
const { Analytics } = await import(${JSON.stringify(entry)});
const analytics = new Analytics('wk', { endpoint: 'http://127.0.0.1:9', maxRetries: 0 });
analytics.track({ userId: 'u', event: 'e' });
await analytics.close().catch(() => undefined);
console.log('loaded');`);
    expect(stdout.trim()).toBe('loaded');
  });

  it('(control) the guard does refuse kafkajs', async () => {
    const kafkaModule = pathToFileURL(`${root}src/kafka/index.ts`).href;
    await expect(runGuarded(`await import(${JSON.stringify(kafkaModule)});`)).rejects.toThrow(/forbidden import: kafkajs/);
  });
});
