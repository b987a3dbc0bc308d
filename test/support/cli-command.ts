// The one way tests and the chaos harness start `switchyard` as a child process: Node on
// the compiled dist/cli/main.js, never the TypeScript sources through tsx.
//
// NOTE: a tsx start compiles the whole import graph of the CLI in the child (about 1.3 s
// of CPU with tsx's cache warm, 2 s and more under load, against 0.6 s from dist/), and the
// integration tests start some hundreds of CLI and daemon processes. dist/ is what `npm ci`
// (prepare) and `npm run build` write; a test must never run a dist/ older than src/, so
// the integration project's global setup rebuilds it when any output is missing or older
// than its source (test/support/global-setup.ts), and each test process checks it again
// before its first start (staleSources below: a stat of each file, some milliseconds).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** The compiled CLI that every child process runs. */
export const CLI_MAIN = join(ROOT, 'dist', 'cli', 'main.js');

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

function mtime(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * The sources under src/ of the checkout at `root` that dist/ does not hold the compile
 * of: each one whose output is missing, and each one newer than the oldest output (tsc
 * writes every output on each compile, and one file's output can depend on another's
 * source), or all of them when a compiler config (tsconfig.json, tsconfig.build.json) is
 * newer than it. Empty: dist/ is what src/ compiles to.
 */
export function staleSources(root: string = ROOT): string[] {
  const src = join(root, 'src');
  const sources = sourceFiles(src).map((path) => ({ path, time: mtime(path) ?? Infinity, built: mtime(join(root, 'dist', relative(src, path)).replace(/\.ts$/, '.js')) }));
  const missing = sources.filter((source) => source.built === undefined);
  if (missing.length > 0) return missing.map((source) => source.path);
  const oldestOutput = Math.min(...sources.map((source) => source.built ?? 0));
  const configTime = Math.max(...['tsconfig.json', 'tsconfig.build.json'].map((file) => mtime(join(root, file)) ?? 0));
  if (configTime > oldestOutput) return sources.map((source) => source.path);
  return sources.filter((source) => source.time > oldestOutput).map((source) => source.path);
}

/** The command that compiles src/ to dist/ (package.json's prepare and build run the same). */
export const BUILD_COMMAND: readonly string[] = [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'];

function staleness(stale: readonly string[]): string {
  const shown = stale.slice(0, 3).map((file) => relative(ROOT, file));
  return `${shown.join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}`;
}

/**
 * Compiles src/ to dist/ now when dist/ is stale (for the chaos harness, which has no
 * global setup); throws when the compile leaves it stale. tsc writes its output even for
 * a type error: the type check (`npm run typecheck`) is where that fails.
 */
export function buildIfStale(log: (line: string) => void = () => undefined): void {
  const stale = staleSources();
  if (stale.length === 0) return;
  log(`dist/ is older than ${staleness(stale)}: compiling src/ (tsc -p tsconfig.build.json)`);
  const result = spawnSync(process.execPath, BUILD_COMMAND, { cwd: ROOT, encoding: 'utf8' });
  const still = staleSources();
  if (still.length > 0) {
    throw new Error(`compiling src/ to dist/ left dist/ older than ${staleness(still)} (tsc exit ${String(result.status)}):\n${result.stdout}${result.stderr}`);
  }
}

let checked = false;

/** Throws, saying what to run, when dist/ is older than src/ (checked once per process). */
export function assertDistFresh(): void {
  if (checked) return;
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: run npm run build (the integration tests' global setup builds it)`);
  const stale = staleSources();
  if (stale.length > 0) {
    throw new Error(`dist/ is older than ${staleness(stale)}: the child processes would run old code; run npm run build (or the tests through vitest, whose global setup builds it)`);
  }
  checked = true;
}

/** process.execPath's arguments for `switchyard <args>`: Node's own options first, then the compiled CLI. */
export function cliArgv(args: readonly string[], nodeArgs: readonly string[] = []): string[] {
  assertDistFresh();
  return [...nodeArgs, CLI_MAIN, ...args];
}
