// `switchyard check-config`: validate a file the way the daemon would load it, and
// show what it resolved to, so an operator can check defaults and `${ENV}` values
// before a deploy without exposing secrets in CI logs.

import { stringify } from 'yaml';
import { describeRefusal, isLocalhostName, judgeAddress } from '../network/address-rule.js';
import { formatPath, loadConfigFile } from './load.js';
import { MIN_SCRUBBED_SECRET_LENGTH, maskConfig, shortSecretsOf } from './mask.js';
import type { Config } from './schema.js';

type Env = Record<string, string | undefined>;

/**
 * Prints the resolved config (secrets masked) to `out` and returns 0, or every problem to
 * `problems` and returns 1; `problems` also gets what is valid but will not work as the
 * file may expect (warnings). So `check-config > resolved.yaml` keeps only the config,
 * and the problems show on the terminal (docs/cli.md#operator-commands).
 */
export function runCheckConfig(file: string, env: Env, out: (line: string) => void, problems: (line: string) => void): number {
  const result = loadConfigFile(file, env);
  if (!result.ok) {
    for (const error of result.errors) problems(error);
    return 1;
  }
  for (const warning of configWarnings(result.config)) problems(`${file}: warning: ${warning}`);
  out(`# ${file}: valid. Resolved config with defaults applied; durations in milliseconds; secrets shown as ****, webhook URLs as their origin.`);
  const text = stringify(maskConfig(result.config), { lineWidth: 0 });
  for (const line of text.trimEnd().split('\n')) out(line);
  return 0;
}

/**
 * What is valid but will not work as the file may expect: secrets too short for the
 * logs to find them in text, and (with `delivery.blockPrivateNetworks` on) webhook URLs
 * whose host is a refused address as written.
 */
export function configWarnings(config: Config): string[] {
  return [...shortSecretWarnings(config), ...guardWarnings(config)];
}

function shortSecretWarnings(config: Config): string[] {
  return shortSecretsOf(config).map(
    ({ path }) =>
      `${path}: is shorter than ${MIN_SCRUBBED_SECRET_LENGTH} characters, so the logs mask it only in fields named for it, not wherever it might appear in a message; use a longer secret`,
  );
}

/**
 * With `delivery.blockPrivateNetworks` on, webhook URLs whose host is a refused address
 * as written (an IP address, or localhost): every request to them will be refused. Names
 * are not resolved here: what they resolve to when a request goes out is what counts.
 */
function guardWarnings(config: Config): string[] {
  if (!config.delivery.blockPrivateNetworks) return [];
  const warnings: string[] = [];
  config.destinations.forEach((destination, i) => {
    destination.settings.webhooks.forEach((hook, j) => {
      const host = new URL(hook.url).hostname;
      const bare = host.startsWith('[') ? host.slice(1, -1) : host;
      const verdict = judgeAddress(bare);
      const refusal = verdict !== undefined ? (verdict.allowed ? undefined : describeRefusal(verdict)) : isLocalhostName(bare) ? 'a loopback address' : undefined;
      if (refusal === undefined) return;
      const path = formatPath(['destinations', i, 'settings', 'webhooks', j, 'url']);
      warnings.push(
        `${path}: ${bare} is ${refusal} and delivery.blockPrivateNetworks is on, so every request to this URL will be refused (outcome blocked, dead-lettered); use a public address, or turn the guard off`,
      );
    });
  });
  return warnings;
}
