// Builds dist/ for the published package:
// - dist/index.js: one ES module, the client with the daemon's call model (src/calls,
//   re-exported by src/call-model.ts) inlined, so the package has no dependency;
//   kafkajs stays an import that runs only when the Kafka transport is used.
// - dist/*.d.ts: the package's declarations, which must not reach outside it.
// Runs on `npm pack` (prepack) and `npm run build`.
// NOTE: prepack, not prepare: an installed package that has a prepare script makes npm 11
// warn about install scripts "not yet covered by allowScripts" in every application that
// installs the tarball, though npm never runs it there.
import { execFileSync } from 'node:child_process';
import { cp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const dist = `${packageDir}dist`;
const types = `${dist}/.types`;

await rm(dist, { recursive: true, force: true });

await build({
  entryPoints: [`${packageDir}src/index.ts`],
  outfile: `${dist}/index.js`,
  bundle: true,
  // NOTE: every package (kafkajs, node:*) stays an import; only this repository's own
  // modules are inlined.
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

// tsc mirrors the repository under .types; keep this package's files, minus the one
// that re-exports the daemon's modules (no declaration refers to it).
const own = `${types}/packages/client/src`;
for (const name of await readdir(own)) {
  if (!name.endsWith('.d.ts') || name === 'call-model.d.ts') continue;
  const text = await readFile(`${own}/${name}`, 'utf8');
  if (text.includes('call-model') || text.includes('../src/') || text.includes("'kafkajs'")) {
    throw new Error(`build: ${name} refers to call-model, the daemon's src/ or kafkajs; the published declarations must stand alone`);
  }
  await cp(`${own}/${name}`, `${dist}/${name}`);
}
await rm(types, { recursive: true, force: true });
