import { createHmac } from 'node:crypto';

/**
 * The `X-Signature` header value: lowercase hex HMAC-SHA1 of the body, keyed by the
 * destination's shared secret (the key is the secret's UTF-8 bytes). A string body
 * is signed as UTF-8, which is how it goes on the wire.
 */
export function signBody(body: string | Buffer, secret: string): string {
  const hmac = createHmac('sha1', secret);
  if (typeof body === 'string') hmac.update(body, 'utf8');
  else hmac.update(body);
  return hmac.digest('hex');
}
