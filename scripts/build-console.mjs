// Builds the operator console's page script: console/app.ts to dist/console/app.js, which
// src/admin/console-route.ts serves. Type-checks the console's project (console/tsconfig.json,
// the DOM's types and none of Node's) first, and writes nothing when that fails.
//
// NOTE: not `tsc -p console/tsconfig.json` with an outDir: the console takes the types of
// the admin API's answers from src/admin/answers.ts (`import type`, gone from the output),
// and tsc would lay its output out from the repository's root (dist/console/console/app.js)
// with an empty dist/console/src/admin/answers.js beside it. Only the console's own files
// are written, each as dist/console/<name>.js.
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CONFIG = join(ROOT, 'console', 'tsconfig.json');
const OUT_DIR = join(ROOT, 'dist', 'console');

const formatHost = { getCanonicalFileName: (name) => name, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };

function fail(diagnostics) {
  process.stderr.write(ts.formatDiagnosticsWithColorAndContext(diagnostics, formatHost));
  process.stderr.write(`build-console: ${CONFIG} does not compile (above); dist/console/ is left as it was\n`);
  process.exit(1);
}

const config = ts.getParsedCommandLineOfConfigFile(CONFIG, { noEmit: false }, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (diagnostic) => fail([diagnostic]) });
if (config.errors.length > 0) fail(config.errors);
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) fail(diagnostics);

mkdirSync(OUT_DIR, { recursive: true });
for (const file of config.fileNames) {
  const result = program.emit(program.getSourceFile(file), (name, text) => {
    if (name.endsWith('.js')) writeFileSync(join(OUT_DIR, basename(name)), text);
  });
  if (result.emitSkipped) fail(result.diagnostics);
}
