// switchyard_config_reloads_total{result} counts what the config store does with a
// changed file, and switchyard_build_info names the running version. No broker needed.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfigFile } from '../../src/config/load.js';
import { watchedConfigStore } from '../../src/config/store.js';
import type { ConfigStore } from '../../src/config/store.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { writeConfigFile } from '../support/daemon.js';
import { waitFor } from '../support/wait-for.js';

const VERSION = (JSON.parse(readFileSync(resolve(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

const config = (destinations: string[]) => ({
  sources: [{ id: 'web', writeKey: 'k-1', destinations }],
  destinations: destinations.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }] } })),
});

let store: ConfigStore | undefined;
afterEach(() => store?.close());

async function reloads(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const metric = await metrics.configReloads.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.result), v.value]));
}

describe('config reload metrics', () => {
  it('count applied and refused reloads; both series exist from the start', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const file = writeConfigFile(config(['first']));
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    store = watchedConfigStore({ file, initial: loaded.config, env: {}, logger: silentLogger(), intervalMs: 50, onReload: (result) => metrics.configReloads.inc({ result }) });
    expect(await reloads(metrics)).toEqual({ applied: 0, refused: 0 });

    // NOTE: each version replaces the file at once: a write in place can be read half done on a busy machine (an extra refusal).
    const replace = (text: string) => {
      writeFileSync(`${file}.next`, text);
      renameSync(`${file}.next`, file);
    };
    replace(stringify(config(['first', 'second'])));
    await waitFor(async () => (await reloads(metrics)).applied === 1, { timeoutMs: 10_000, what: 'an applied reload' });
    expect(store.current().destinations.map((d) => d.id)).toEqual(['first', 'second']);

    replace('sources: [ { id: web, destinations: [nowhere] } ]\n');
    await waitFor(async () => (await reloads(metrics)).refused === 1, { timeoutMs: 10_000, what: 'a refused reload' });
    expect(store.current().destinations.map((d) => d.id)).toEqual(['first', 'second']);
    expect(await reloads(metrics)).toEqual({ applied: 1, refused: 1 });

    const text = await metrics.registry.metrics();
    expect(text).toContain('switchyard_config_reloads_total{result="refused"} 1');
    expect(text).toContain('switchyard_config_reloads_total{result="applied"} 1');
  });

  it('log when a refused file is good again: put back as it runs (nothing to apply), or fixed with a change (applied)', async () => {
    const lines: { msg: string; refusedBefore?: number }[] = [];
    const sink = { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string; refusedBefore?: number }) };
    const messages = () => lines.map((line) => line.msg.replace(/ \d+ problem\(s\) in \S+;.*/, ''));
    const good = stringify(config(['first']));
    const file = writeConfigFile(config(['first']));
    // NOTE: each version replaces the file at once (as a ConfigMap's symlink swap does): a
    // write in place could be read half done on a busy machine, an extra refusal.
    const replace = (text: string) => {
      writeFileSync(`${file}.next`, text);
      renameSync(`${file}.next`, file);
    };
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    store = watchedConfigStore({ file, initial: loaded.config, env: {}, logger: createLogger({ level: 'info', destination: sink }), intervalMs: 50 });

    // Two bad versions, then the file as it runs.
    replace('sources: [ { id: web, destinations: [nowhere] } ]\n');
    await waitFor(() => lines.length >= 1, { timeoutMs: 10_000, what: 'the first refusal' });
    replace('sources: [ { id: web, destinations: [elsewhere] } ]\n');
    await waitFor(() => lines.length >= 2, { timeoutMs: 10_000, what: 'the second refusal' });
    replace(good);
    await waitFor(() => lines.length >= 3, { timeoutMs: 10_000, what: 'the line that the file is good again' });
    expect(messages()).toEqual([
      'config reload refused:',
      'config reload refused:',
      'config file valid again after 2 refused version(s); it matches the running config: nothing to apply',
    ]);
    expect(lines[2]!.refusedBefore).toBe(2);

    // Bad again, then fixed with a change: said, and applied.
    replace('sources: [ { id: web, destinations: [nowhere] } ]\n');
    await waitFor(() => lines.length >= 4, { timeoutMs: 10_000, what: 'the third refusal' });
    replace(stringify(config(['first', 'second'])));
    await waitFor(() => lines.length >= 6, { timeoutMs: 10_000, what: 'the fix and the reload' });
    expect(messages().slice(3)).toEqual(['config reload refused:', 'config file valid again after 1 refused version(s); applying it', 'config reloaded']);
    expect(store.current().destinations.map((d) => d.id)).toEqual(['first', 'second']);

    // A good change after a good one: only the reload.
    replace(stringify(config(['second'])));
    await waitFor(() => lines.length >= 7, { timeoutMs: 10_000, what: 'a plain reload' });
    expect(messages()[6]).toBe('config reloaded');
  });

  it('export switchyard_build_info{version} = 1', async () => {
    const text = await createMetrics({ defaultMetrics: false }).registry.metrics();
    expect(text).toContain(`switchyard_build_info{version="${VERSION}"} 1`);
  });
});
