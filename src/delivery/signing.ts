// How a destination signs its requests (docs/webhooks.md#delivery-and-retries), decided once per config: the HMAC
// keys (a whsec_ secret base64-decoded) are built when the settings are prepared, so an
// attempt only hashes.
//
// - `segment` (the default, the seed's): `X-Signature` = hex HMAC-SHA1 of the body,
//   keyed by the first secret.
// - `standard` (Standard Webhooks, standardwebhooks.com): `webhook-id`,
//   `webhook-timestamp` (the attempt's, in seconds) and `webhook-signature`, one
//   `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret, space-separated, so a
//   receiver that knows either secret of a rotation accepts the request.
// - `custom` (`settings.signature`, docs/webhooks.md#custom-signatures): an HMAC of a
//   template over {id}, {timestamp} and {body}, for receivers written for another sender.
// Several schemes at once (`[standard, custom]`) each add their headers.
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { STANDARD_SECRET_PATTERN } from '../config/schema.js';
import type { CustomSignatureConfig, SigningScheme } from '../config/schema.js';

/**
 * The key bytes of a `whsec_<base64>` secret, or undefined when it is not one. Strict
 * base64 (padding as an encoder writes it): the config refuses anything else at load,
 * rather than sign every request with a key the receiver's library decodes differently.
 */
export function decodeStandardSecret(secret: string): Buffer | undefined {
  if (!STANDARD_SECRET_PATTERN.test(secret)) return undefined;
  return Buffer.from(secret.slice('whsec_'.length), 'base64');
}

/** One `v1,<base64>` signature of Standard Webhooks. */
export function standardSignature(key: Buffer | KeyObject, id: string, timestampSeconds: number, body: Buffer | string): string {
  // NOTE: "id.timestamp." and the body are hashed one after the other: the body is
  // never copied into a joined string.
  const hmac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.`, 'utf8');
  hmac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return `v1,${hmac.digest('base64')}`;
}

/**
 * Adds a destination's signature headers for one attempt to `headers`. `messageId` is
 * the delivery message's `message-id` header; `nowMs` the attempt's time.
 */
export type Signer = (body: Buffer, messageId: string | undefined, nowMs: number, headers: Record<string, string>) => void;

/** What a destination signs with: its scheme(s), its shared secrets, its `signature` when custom. */
export interface SigningSettings {
  signing: SigningScheme | readonly SigningScheme[];
  secrets: readonly string[];
  signature?: CustomSignatureConfig | undefined;
}

/** The signer of a destination's settings; undefined when it has nothing to sign with. */
export function createSigner(settings: SigningSettings): Signer | undefined {
  const schemes = typeof settings.signing === 'string' ? [settings.signing] : settings.signing;
  const signers = schemes.map((scheme) => schemeSigner(scheme, settings)).filter((signer): signer is Signer => signer !== undefined);
  const [only] = signers;
  if (signers.length <= 1) return only;
  return (body, messageId, nowMs, headers) => {
    for (const sign of signers) sign(body, messageId, nowMs, headers);
  };
}

function schemeSigner(scheme: SigningScheme, { secrets, signature }: SigningSettings): Signer | undefined {
  if (scheme === 'custom') {
    // The config schema refuses custom without a signature and a key; reaching here is a bug.
    if (signature === undefined) throw new Error('signing: custom needs settings.signature');
    const secret = signature.secret ?? secrets[0];
    if (secret === undefined) throw new Error('signing: custom needs a key (sharedSecret or signature.secret)');
    return customSigner(signature, secret);
  }
  const [first] = secrets;
  if (first === undefined) return undefined;
  if (scheme === 'segment') {
    // The seed's key is the secret's UTF-8 bytes. NOTE: a KeyObject made once, not the
    // bytes: createHmac then skips importing the key on every request, about a sixth of a
    // signature's cost (docs/benchmarks.md#figures-behind-the-code).
    const key = createSecretKey(Buffer.from(first, 'utf8'));
    return (body, _messageId, _nowMs, headers) => {
      headers['x-signature'] = createHmac('sha1', key).update(body).digest('hex');
    };
  }
  const keys = secrets.map((secret, i) => {
    const bytes = decodeStandardSecret(secret);
    // The config schema refuses such a secret; reaching here is a bug.
    if (bytes === undefined) throw new Error(`signing: standard needs whsec_<base64> secrets; secret ${i + 1} is not one`);
    return createSecretKey(bytes);
  });
  return (body, messageId, nowMs, headers) => {
    const id = attemptId(body, messageId);
    const timestamp = Math.floor(nowMs / 1000);
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(timestamp);
    headers['webhook-signature'] = keys.map((key) => standardSignature(key, id, timestamp, body)).join(' ');
  };
}

/** The id a signature carries: the messageId as a header can hold it, or one derived from the body. */
function attemptId(body: Buffer, messageId: string | undefined): string {
  return messageId !== undefined && messageId !== '' ? webhookId(messageId) : fallbackMessageId(body);
}

/** One piece of a custom signature's content: literal text, or a placeholder. */
type ContentPart = { text: Buffer } | { placeholder: 'id' | 'timestamp' | 'body' };

/** `content` cut at its placeholders, once per config: "{timestamp}.{body}" → timestamp, ".", body. */
export function contentParts(content: string): ContentPart[] {
  return content
    .split(/(\{id\}|\{timestamp\}|\{body\})/)
    .filter((piece) => piece !== '')
    .map((piece): ContentPart => (piece === '{id}' ? { placeholder: 'id' } : piece === '{timestamp}' ? { placeholder: 'timestamp' } : piece === '{body}' ? { placeholder: 'body' } : { text: Buffer.from(piece, 'utf8') }));
}

/**
 * `signing: custom`: `header` = prefix + the HMAC (key: the secret's UTF-8 bytes) of the
 * content, in hex or base64; `timestampHeader` and `idHeader` carry what was signed.
 * NOTE: the parts are hashed one after the other: the body is never copied.
 */
function customSigner(signature: CustomSignatureConfig, secret: string): Signer {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const parts = contentParts(signature.content);
  const header = signature.header.toLowerCase();
  const timestampHeader = signature.timestampHeader?.toLowerCase();
  const idHeader = signature.idHeader?.toLowerCase();
  const prefix = signature.prefix ?? '';
  return (body, messageId, nowMs, headers) => {
    const id = idHeader === undefined && !parts.some((p) => 'placeholder' in p && p.placeholder === 'id') ? '' : attemptId(body, messageId);
    const timestamp = String(Math.floor(nowMs / 1000));
    const hmac = createHmac(signature.algorithm, key);
    for (const part of parts) {
      if ('text' in part) hmac.update(part.text);
      else if (part.placeholder === 'body') hmac.update(body);
      else hmac.update(part.placeholder === 'id' ? id : timestamp, 'utf8');
    }
    headers[header] = `${prefix}${hmac.digest(signature.encoding)}`;
    if (timestampHeader !== undefined) headers[timestampHeader] = timestamp;
    if (idHeader !== undefined) headers[idHeader] = id;
  };
}

/** A messageId a header carries unchanged: 1 to 256 printable ASCII characters, no space at either end. */
const HEADER_SAFE_ID = /^[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?$/;

/**
 * The `webhook-id` of a messageId (docs/webhooks.md#standard-webhooks): the messageId
 * itself, or, when a header cannot carry it unchanged (a control character, anything
 * outside printable ASCII, a space at either end, over 256 characters), `msg_sha256_`
 * and 32 hex digits of the SHA-256 of its UTF-8. NOTE: undici refuses control
 * characters in a header, and receivers read other bytes as Latin-1 or UTF-8 as they
 * please, so the id they verify would differ from the one signed; the event would be
 * dead-lettered for its id alone. The mapped id is the same on every attempt (receivers
 * drop duplicates by it); the body keeps the messageId as it is.
 */
export function webhookId(messageId: string): string {
  if (HEADER_SAFE_ID.test(messageId)) return messageId;
  return `msg_sha256_${createHash('sha256').update(messageId, 'utf8').digest('hex').slice(0, 32)}`;
}

/**
 * For a delivery message without a `message-id` header (a producer that wrote
 * `deliveries.<id>` itself): an id that is the same on every attempt of the same body,
 * as Standard Webhooks asks of `webhook-id` (receivers use it to drop duplicates).
 */
function fallbackMessageId(body: Buffer): string {
  return `sha256_${createHash('sha256').update(body).digest('hex').slice(0, 32)}`;
}
