// Builds dist/ for the published package:
// - dist/index.js: one ES module, the whole client; kafkajs and @platformatic/kafka stay
//   imports that run only when the Kafka transport is used.
// - dist/*.d.ts: the package's declarations, which must not mention a Kafka client.
// Runs on `npm pack` (prepack) and `npm run build`; needs nothing outside this folder.
// NOTE: prepack, not prepare: an installed package that has a prepare script makes npm 11
// warn about install scripts "not yet covered by allowScripts" in every application that
// installs the tarball, though npm never runs it there.
import { execFileSync } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const dist = `${packageDir}dist`;

await rm(dist, { recursive: true, force: true });

await build({
  entryPoints: [`${packageDir}src/index.ts`],
  outfile: `${dist}/index.js`,
  bundle: true,
  // NOTE: every package (kafkajs, node:*) stays an import; only this package's own modules are inlined.
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  logLevel: 'warning',
});

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', `${packageDir}tsconfig.build.json`], { stdio: 'inherit' });
} catch {
  console.error('build: tsc found the errors above in the client package; fix them and build again');
  process.exit(1);
}

for (const name of await readdir(dist)) {
  if (!name.endsWith('.d.ts')) continue;
  const text = await readFile(`${dist}/${name}`, 'utf8');
  if (text.includes("'kafkajs'") || text.includes("'@platformatic/kafka'") || text.includes("'../")) {
    throw new Error(`build: ${name} refers to a Kafka client or to a file outside the package; the published declarations must stand alone`);
  }
}
