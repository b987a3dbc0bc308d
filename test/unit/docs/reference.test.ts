// The reference documents keep up with the code: every config key of the schema, every
// metric the daemon registers and every alert rule has its place in docs/.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configJsonSchema } from '../../../src/config/json-schema.js';
import { createMetrics } from '../../../src/observability/metrics.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');

/** Dotted paths of every key the schema describes (audience rules, in `$defs`, are documented as a table of their own). */
function schemaKeyPaths(node: unknown, prefix: string[] = []): string[][] {
  if (Array.isArray(node)) return node.flatMap((item) => schemaKeyPaths(item, prefix));
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => {
    if (key === '$defs') return [];
    if (key !== 'properties' || typeof value !== 'object' || value === null) return schemaKeyPaths(value, prefix);
    return Object.entries(value).flatMap(([name, child]) => [[...prefix, name], ...schemaKeyPaths(child, [...prefix, name])]);
  });
}

/** The text of each `## ` section of a document, by its heading. */
function sections(markdown: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of markdown.split(/^## /m).slice(1)) {
    const newline = part.indexOf('\n');
    out.set(part.slice(0, newline).trim(), part.slice(newline + 1));
  }
  return out;
}

function codeSpans(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
}

describe('docs/configuration.md', () => {
  const bySection = sections(read('docs/configuration.md'));

  it('has a section for every top-level key and names every key below it there', () => {
    const paths = schemaKeyPaths(configJsonSchema());
    expect(paths.length).toBeGreaterThan(30);
    const missing = paths.filter((path) => {
      const section = bySection.get(`\`${path[0]}\``);
      if (section === undefined) return true;
      if (path.length === 1) return false;
      const name = path.at(-1)!;
      const word = new RegExp(`(^|[^\\w])${name}([^\\w]|$)`);
      return !codeSpans(section).some((span) => word.test(span));
    });
    expect(missing.map((path) => path.join('.'))).toEqual([]);
  });
});

describe('docs/metrics.md', () => {
  it('lists every metric the daemon registers', async () => {
    const doc = read('docs/metrics.md');
    const names = (await createMetrics({ defaultMetrics: false }).registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((name) => !doc.includes(`| \`${name}\` |`))).toEqual([]);
  });
});

describe('docs/operations.md', () => {
  it('has a section for every alert of deploy/prometheus/alerts.yaml', () => {
    const rules = parse(read('deploy/prometheus/alerts.yaml')) as { spec: { groups: { rules: { alert?: string }[] }[] } };
    const alerts = rules.spec.groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
    expect(alerts.length).toBeGreaterThan(5);
    const headings = read('docs/operations.md')
      .split('\n')
      .filter((line) => line.startsWith('### '));
    expect(alerts.filter((alert) => !headings.some((h) => new RegExp(`\\b${alert}\\b`).test(h)))).toEqual([]);
  });
});
