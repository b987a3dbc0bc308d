// `switchyard check-config`: validate a file the way the daemon would load it, and
// show what it resolved to, so an operator can check defaults and `${ENV}` values
// before a deploy without exposing secrets in CI logs.

import { stringify } from 'yaml';
import { loadConfigFile } from './load.js';
import { maskConfig } from './mask.js';

type Env = Record<string, string | undefined>;

/** Prints the resolved config (secrets masked) and returns 0, or prints every problem and returns 1. */
export function runCheckConfig(file: string, env: Env, out: (line: string) => void): number {
  const result = loadConfigFile(file, env);
  if (!result.ok) {
    for (const error of result.errors) out(error);
    return 1;
  }
  out(`# ${file}: valid. Resolved config with defaults applied; durations in milliseconds; secrets shown as ****.`);
  const text = stringify(maskConfig(result.config), { lineWidth: 0 });
  for (const line of text.trimEnd().split('\n')) out(line);
  return 0;
}
