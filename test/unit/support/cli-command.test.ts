// The rule the tests' child processes rely on (test/support/cli-command.ts): they run the
// compiled dist/, so a dist/ that is not the compile of src/ must be seen as stale.
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { staleSources } from '../../support/cli-command.js';

/** A stand-in checkout: each file with its modification time, in seconds since the epoch. */
function checkout(files: Record<string, number>): string {
  const root = mkdtempSync(join(tmpdir(), 'switchyard-dist-fresh-'));
  for (const [file, time] of Object.entries(files)) {
    const path = join(root, file);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, '');
    utimesSync(path, time, time);
  }
  return root;
}

const BUILT = { 'tsconfig.json': 100, 'tsconfig.build.json': 100, 'src/a.ts': 100, 'src/cli/b.ts': 100, 'src/c.d.ts': 300, 'dist/a.js': 200, 'dist/cli/b.js': 200 };

describe('staleSources', () => {
  it('is empty when every output is newer than every source and config (a .d.ts has no output)', () => {
    expect(staleSources(checkout(BUILT))).toEqual([]);
  });

  it('names a source edited after the compile', () => {
    const root = checkout({ ...BUILT, 'src/cli/b.ts': 250 });
    expect(staleSources(root)).toEqual([join(root, 'src/cli/b.ts')]);
  });

  it('names a source newer than the oldest output even when its own output is newer (one output can depend on another source)', () => {
    const root = checkout({ ...BUILT, 'dist/a.js': 150, 'src/cli/b.ts': 180, 'dist/cli/b.js': 200 });
    expect(staleSources(root)).toEqual([join(root, 'src/cli/b.ts')]);
  });

  it('names a source without an output', () => {
    const root = checkout({ ...BUILT, 'src/new.ts': 50 });
    expect(staleSources(root)).toEqual([join(root, 'src/new.ts')]);
  });

  it('names every source when a compiler config changed after the compile', () => {
    const root = checkout({ ...BUILT, 'tsconfig.build.json': 250 });
    expect(staleSources(root).sort()).toEqual([join(root, 'src/a.ts'), join(root, 'src/cli/b.ts')]);
  });
});
