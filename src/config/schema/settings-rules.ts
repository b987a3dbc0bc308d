// The rules across a destination's settings, in one place: secrets and signing schemes,
// a custom signature's headers and placeholders, auth beside a static Authorization
// header, and the two shaping lists. Each reads the raw settings and skips what is not of
// the expected shape (the settings' own fields report that), so that every problem shows
// at once.

import { isPlainObject } from './check.js';
import type { IssuePath, Problem } from './check.js';
import { SCHEME_HEADERS, STANDARD_SECRET_FORM, STANDARD_SECRET_PATTERN } from './signing.js';
import { RESERVED_HEADER_NAMES } from './webhooks.js';

/** Every problem across `settings`, in the order the rules are listed. */
export function settingsProblems(settings: Record<string, unknown>): Problem[] {
  return [...signingProblems(settings), ...authProblems(settings), ...customSignatureProblems(settings), ...shapingSettingProblems(settings)];
}

/**
 * The rules across a destination's secret settings. NOTE: a secret is never quoted in
 * a message: check-config output ends up in CI logs.
 */
function signingProblems(settings: Record<string, unknown>): Problem[] {
  const problems: Problem[] = [];
  const { sharedSecret, sharedSecrets, signing } = settings;
  if (sharedSecret !== undefined && sharedSecrets !== undefined) {
    problems.push({
      path: ['sharedSecrets'],
      message: 'give sharedSecret or sharedSecrets, not both; while rotating, list the new and the old secret in sharedSecrets and remove sharedSecret',
    });
  }
  const secrets: [IssuePath, string][] = [];
  if (typeof sharedSecret === 'string') secrets.push([['sharedSecret'], sharedSecret]);
  if (Array.isArray(sharedSecrets)) {
    sharedSecrets.forEach((secret, i) => {
      if (typeof secret === 'string') secrets.push([['sharedSecrets', i], secret]);
    });
    if (sharedSecrets.length === 2 && sharedSecrets[0] === sharedSecrets[1]) {
      problems.push({ path: ['sharedSecrets', 1], message: 'is the same secret as sharedSecrets[0]; list the new secret first and the old one second' });
    }
  }
  if (signing !== 'standard' && !(Array.isArray(signing) && signing.includes('standard'))) return problems;
  if (sharedSecret === undefined && sharedSecrets === undefined) {
    problems.push({ path: ['signing'], message: `signing: standard needs a secret; set sharedSecret to ${STANDARD_SECRET_FORM}` });
  }
  for (const [path, secret] of secrets) {
    if (secret !== '' && !STANDARD_SECRET_PATTERN.test(secret)) problems.push({ path, message: `is not a Standard Webhooks secret; with signing: standard a secret is ${STANDARD_SECRET_FORM}` });
  }
  return problems;
}

/**
 * The rules of `signing: custom` across settings: a `signature` with it (and only with
 * it), a key, content placeholders the receiver can read from headers, header names that
 * clash with nothing else the request carries.
 */
function customSignatureProblems(settings: Record<string, unknown>): Problem[] {
  const schemes: unknown[] = Array.isArray(settings.signing) ? settings.signing : [settings.signing];
  const custom = schemes.includes('custom');
  const signature = settings.signature;
  if (!custom) return signature === undefined ? [] : [{ path: ['signature'], message: 'is used only with signing: custom (or a list holding custom); add custom to signing or remove signature' }];
  if (!isPlainObject(signature)) return signature === undefined ? [{ path: ['signing'], message: 'signing: custom needs settings.signature { header, algorithm, encoding, content }; see docs/webhooks.md#custom-signatures' }] : [];
  const problems: Problem[] = [];
  if (signature.secret === undefined && settings.sharedSecret === undefined && settings.sharedSecrets === undefined) {
    problems.push({ path: ['signing'], message: 'signing: custom needs a key; set sharedSecret, or signature.secret' });
  }
  const content = typeof signature.content === 'string' ? signature.content : '{body}';
  if (content.includes('{timestamp}') && signature.timestampHeader === undefined) {
    problems.push({ path: ['signature', 'content'], message: 'uses {timestamp}; set signature.timestampHeader so that the receiver gets the timestamp that was signed' });
  }
  if (content.includes('{id}') && signature.idHeader === undefined) {
    problems.push({ path: ['signature', 'content'], message: 'uses {id}; set signature.idHeader so that the receiver gets the id that was signed' });
  }
  const taken = new Map<string, string>();
  for (const name of RESERVED_HEADER_NAMES.keys()) taken.set(name, 'a header Switchyard or the HTTP client sets');
  for (const scheme of schemes) {
    if (scheme === 'segment' || scheme === 'standard') for (const name of SCHEME_HEADERS[scheme]) taken.set(name, `set by signing: ${scheme}`);
  }
  // Free again when its own scheme is not in use: a receiver may expect X-Signature with another algorithm.
  for (const [scheme, names] of Object.entries(SCHEME_HEADERS)) {
    if (!schemes.includes(scheme)) for (const name of names) taken.delete(name);
  }
  if (settings.auth !== undefined) taken.set('authorization', 'set by settings.auth');
  if (Array.isArray(settings.webhooks)) {
    for (const hook of settings.webhooks) {
      if (isPlainObject(hook) && isPlainObject(hook.headers)) for (const name of Object.keys(hook.headers)) taken.set(name.toLowerCase(), 'a static header of a webhook entry');
    }
  }
  for (const key of ['header', 'timestampHeader', 'idHeader'] as const) {
    const name = signature[key];
    if (typeof name !== 'string') continue;
    const clash = taken.get(name.toLowerCase());
    if (clash !== undefined) problems.push({ path: ['signature', key], message: `header ${JSON.stringify(name)} is ${clash}; choose another name` });
    taken.set(name.toLowerCase(), `signature.${key}`);
  }
  return problems;
}

/**
 * `settings.auth` sets the Authorization header; a static one beside it would be
 * overwritten without a word, so the two together are refused.
 */
function authProblems(settings: Record<string, unknown>): Problem[] {
  if (settings.auth === undefined || !Array.isArray(settings.webhooks)) return [];
  const problems: Problem[] = [];
  settings.webhooks.forEach((hook, i) => {
    const headers = isPlainObject(hook) && isPlainObject(hook.headers) ? hook.headers : {};
    const name = Object.keys(headers).find((n) => n.toLowerCase() === 'authorization');
    if (name !== undefined) {
      problems.push({ path: ['webhooks', i, 'headers', name], message: 'settings.auth sets the Authorization header; remove this one, or remove settings.auth and keep the static header' });
    }
  });
  return problems;
}

function shapingSettingProblems(settings: Record<string, unknown>): Problem[] {
  if (settings.dropProperties === undefined || settings.allowProperties === undefined) return [];
  return [
    {
      path: ['allowProperties'],
      message: 'give dropProperties or allowProperties, not both: allowProperties keeps only the listed keys of properties and traits, dropProperties removes the listed paths',
    },
  ];
}
