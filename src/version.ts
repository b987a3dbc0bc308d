import { readFileSync } from 'node:fs';

// NOTE: resolved from this file, so it works both from src/ (tsx) and dist/.
const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export const VERSION: string = packageJson.version;
export const USER_AGENT = `switchyard/${VERSION}`;
