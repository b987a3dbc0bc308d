import { readFileSync } from 'node:fs';

// NOTE: resolved from this file, so it reads the package's own package.json both from
// src/ (tests, tsx) and from the bundled dist/index.js.
const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

/** This package's version: in the User-Agent and in every call's `context.library`. */
export const VERSION: string = packageJson.version;
