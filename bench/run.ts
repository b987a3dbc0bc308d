// `npm run bench -- <name> [options]` (= `tsx bench/run.ts <name> ...`): runs the
// benchmark in bench/<name>.ts, which exports `main(args)`. Benchmarks are not part
// of `npm test`; they print a table against a same-run baseline and never fail a build.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** This runner and the harness the benchmarks share. */
const NOT_BENCHMARKS = new Set(['run.ts', 'support.ts']);

function available(): string[] {
  return readdirSync(here)
    .filter((file) => file.endsWith('.ts') && !NOT_BENCHMARKS.has(file))
    .map((file) => file.slice(0, -'.ts'.length))
    .sort();
}

async function run(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const names = available();
  if (!name || name.startsWith('-')) {
    process.stderr.write(`usage: npm run bench -- <name> [options]\nbenchmarks: ${names.join(', ') || '(none)'}\n`);
    return 1;
  }
  const file = join(here, `${name}.ts`);
  if (!names.includes(name) || !existsSync(file)) {
    process.stderr.write(`bench: no benchmark "${name}"; benchmarks: ${names.join(', ') || '(none)'}\n`);
    return 1;
  }
  const module = (await import(pathToFileURL(file).href)) as { main?: (args: string[]) => Promise<void> };
  if (typeof module.main !== 'function') {
    process.stderr.write(`bench: bench/${name}.ts does not export main(args)\n`);
    return 1;
  }
  await module.main(args);
  return 0;
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 2;
  },
);
