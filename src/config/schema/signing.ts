// How a destination signs its requests: `signing` (segment, standard, custom, or several
// while a receiver migrates), and `signature` for `signing: custom`
// (docs/webhooks.md#custom-signatures). The rules across settings are in settings-rules.ts.

import { checkList, checkSecret, checkText, oneOf } from './basic-checks.js';
import { describe, fail, FROM_ENV, ok, orFromEnv } from './check.js';
import type { Checked, InputSchema } from './check.js';
import { checkHeaderName } from './webhooks.js';
import { field, secretText, strictObject } from './zod-fields.js';

/** `segment`: X-Signature (the seed's). `standard`: Standard Webhooks headers. `custom`: `settings.signature`. */
export type SigningScheme = 'segment' | 'standard' | 'custom';
export const SIGNING_SCHEMES: readonly SigningScheme[] = ['segment', 'standard', 'custom'];

/** `settings.signature` (docs/webhooks.md#custom-signatures): an HMAC of `content`, in `header`. */
export interface CustomSignatureConfig {
  header: string;
  algorithm: 'sha1' | 'sha256' | 'sha512';
  encoding: 'hex' | 'base64';
  /** Over `{id}`, `{timestamp}` and `{body}`; `{body}` by default. */
  content: string;
  /** Written before the digest, e.g. `sha256=`. */
  prefix?: string;
  /** Carries `{timestamp}` (seconds of the attempt). */
  timestampHeader?: string;
  /** Carries `{id}` (as `webhook-id` of Standard Webhooks). */
  idHeader?: string;
  /** The key; by default the destination's (first) shared secret. */
  secret?: string;
}

/** The placeholders a custom signature's `content` may hold. */
export const SIGNATURE_PLACEHOLDERS = ['{id}', '{timestamp}', '{body}'] as const;

/** How many secrets a destination may list in `sharedSecrets`: the new one and the old one. */
export const MAX_SHARED_SECRETS = 2;

/**
 * A Standard Webhooks secret: `whsec_` and the key in base64, padded as an encoder
 * writes it (what the receivers' libraries decode).
 */
export const STANDARD_SECRET_PATTERN = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$/;

export const STANDARD_SECRET_FORM = '"whsec_" followed by the key in base64, e.g. whsec_ and the output of `openssl rand -base64 32`';

export const STANDARD_SECRET_INPUT: InputSchema = orFromEnv({ type: 'string', pattern: STANDARD_SECRET_PATTERN.source });

/** A Standard Webhooks secret (`operations.webhooks[].secret`): never quoted in a message. */
export function checkStandardSecret(value: unknown): Checked<string> {
  const secret = checkSecret(value);
  if (!secret.ok) return secret;
  if (!STANDARD_SECRET_PATTERN.test(secret.value)) return fail(`is not a Standard Webhooks secret; give ${STANDARD_SECRET_FORM}`);
  return secret;
}
checkStandardSecret.input = STANDARD_SECRET_INPUT;

function checkSignatureContent(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  const unknown = text.value.match(/\{[^}]*\}/g)?.find((p) => !(SIGNATURE_PLACEHOLDERS as readonly string[]).includes(p));
  if (unknown !== undefined) return fail(`${describe(value)} holds ${unknown}; the placeholders are ${SIGNATURE_PLACEHOLDERS.join(', ')}`);
  if (!text.value.includes('{body}')) return fail(`${describe(value)} has no {body}: a signature must cover the body; e.g. "{timestamp}.{body}"`);
  return ok(text.value);
}
checkSignatureContent.input = { type: 'string', minLength: 1, description: 'what is signed: text with {id}, {timestamp} and {body}, e.g. "{timestamp}.{body}"' };

export function checkSigning(value: unknown): Checked<SigningScheme | SigningScheme[]> {
  const one = oneOf(SIGNING_SCHEMES);
  if (!Array.isArray(value)) return one(value);
  const listed = checkList(one, { min: 1, max: SIGNING_SCHEMES.length })(value);
  if (!listed.ok) return listed;
  const twice = listed.value.findIndex((scheme, i) => listed.value.indexOf(scheme) !== i);
  if (twice !== -1) return fail(`lists ${listed.value[twice]} twice; list each scheme once`, [twice]);
  return listed;
}
checkSigning.input = {
  anyOf: [{ enum: SIGNING_SCHEMES }, { type: 'array', minItems: 1, maxItems: SIGNING_SCHEMES.length, uniqueItems: true, items: { enum: SIGNING_SCHEMES } }, FROM_ENV],
};

export const signatureSchema = strictObject({
  header: field(checkHeaderName),
  algorithm: field(oneOf(['sha1', 'sha256', 'sha512'] as const)),
  encoding: field(oneOf(['hex', 'base64'] as const)),
  content: field(checkSignatureContent).prefault('{body}'),
  prefix: field(checkText).optional(),
  timestampHeader: field(checkHeaderName).optional(),
  idHeader: field(checkHeaderName).optional(),
  secret: secretText.optional(),
}).transform((sig): CustomSignatureConfig => {
  const out: CustomSignatureConfig = { header: sig.header, algorithm: sig.algorithm, encoding: sig.encoding, content: sig.content };
  if (sig.prefix !== undefined) out.prefix = sig.prefix;
  if (sig.timestampHeader !== undefined) out.timestampHeader = sig.timestampHeader;
  if (sig.idHeader !== undefined) out.idHeader = sig.idHeader;
  if (sig.secret !== undefined) out.secret = sig.secret;
  return out;
});

/** The header names each scheme sets, lower-cased. */
export const SCHEME_HEADERS: Record<Exclude<SigningScheme, 'custom'>, readonly string[]> = {
  segment: ['x-signature'],
  standard: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
};
