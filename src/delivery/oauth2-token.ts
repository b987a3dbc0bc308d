// OAuth2 client credentials (RFC 6749 section 4.4) for `settings.auth.oauth2`
// (docs/webhooks.md#authentication). Pure: the token request a config makes, what a
// token endpoint's answer comes to, and how long a token is used. The requests
// themselves go through the HTTP sender (token-source.ts).
import { STATUS_CODES } from 'node:http';
import type { OAuth2Config } from '../config/schema.js';

/** The token request: a form POST (RFC 6749 section 4.4.2). */
export interface TokenRequest {
  body: string;
  headers: Record<string, string>;
}

/**
 * RFC 6749 section 2.3.1: with HTTP Basic, client id and secret are each
 * form-urlencoded before they are joined by `:` and base64-encoded. NOTE: a receiver's
 * identity provider that skips that decoding still reads ids and secrets of letters,
 * digits and `-._~` the same (form encoding leaves those as they are).
 */
function formEncode(text: string): string {
  return new URLSearchParams({ v: text }).toString().slice(2);
}

export function tokenRequest(config: OAuth2Config, userAgent: string): TokenRequest {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (config.scope !== undefined) form.set('scope', config.scope);
  // Not in RFC 6749: Auth0 and others take the API a token is for as `audience`.
  if (config.audience !== undefined) form.set('audience', config.audience);
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
    'user-agent': userAgent,
  };
  if (config.clientAuth === 'basic') {
    headers.authorization = `Basic ${Buffer.from(`${formEncode(config.clientId)}:${formEncode(config.clientSecret)}`, 'utf8').toString('base64')}`;
  } else {
    form.set('client_id', config.clientId);
    form.set('client_secret', config.clientSecret);
  }
  return { body: form.toString(), headers };
}

/** A token and until when it is used. */
export interface IssuedToken {
  ok: true;
  token: string;
  /** Renewed from this time on: its expiry minus the margin (`tokenUseEnd`). */
  useUntilMs: number;
}

export interface TokenFailure {
  ok: false;
  /** For the retry's `error` header and the logs: names the endpoint's origin, never the answer's body. */
  reason: string;
}

export type TokenOutcome = IssuedToken | TokenFailure;

/** A token endpoint that gives no `expires_in`: the token is used this long (or until a receiver answers 401). */
export const DEFAULT_TOKEN_LIFETIME_MS = 300_000;
/** The most of a token's life left unused: renewed this long before it expires, or a tenth of its life when that is shorter. */
export const MAX_TOKEN_MARGIN_MS = 30_000;

/**
 * Until when a token issued at `issuedAtMs`, living `lifetimeMs`, is used. NOTE: the
 * margin covers the token request's own time and clock skew between the identity
 * provider and the receiver; a tenth of the life at most, so that a token of 2 s is
 * still used for 1.8 s rather than renewed on every request.
 */
export function tokenUseEnd(issuedAtMs: number, lifetimeMs: number): number {
  return issuedAtMs + lifetimeMs - Math.min(MAX_TOKEN_MARGIN_MS, lifetimeMs / 10);
}

/** An OAuth error code (RFC 6749 section 5.2) short and plain enough to print. */
const ERROR_CODE = /^[\x21-\x7e]{1,64}$/;

/**
 * What a token endpoint's answer comes to. `endpoint` is the origin of the token URL
 * (path and query may hold a secret). `requestedAtMs`: when the request went out, so
 * that the time the request took is taken off the token's life.
 */
export function readTokenAnswer(endpoint: string, status: number, body: string, requestedAtMs: number): TokenOutcome {
  const parsed = parseJson(body);
  if (status < 200 || status >= 300) {
    const code = typeof parsed?.error === 'string' && ERROR_CODE.test(parsed.error) ? ` (${parsed.error})` : '';
    return { ok: false, reason: `token endpoint ${endpoint} answered ${status} ${STATUS_CODES[status] ?? 'Unknown Status'}${code}` };
  }
  if (parsed === undefined) return { ok: false, reason: `token endpoint ${endpoint} answered ${status} with a body that is not a JSON object` };
  const token = parsed.access_token;
  if (typeof token !== 'string' || token === '') return { ok: false, reason: `token endpoint ${endpoint} answered ${status} without an access_token` };
  // undici refuses a header value with control characters; the token goes in one.
  if (/[^\x20-\x7e]/.test(token)) return { ok: false, reason: `token endpoint ${endpoint} answered ${status} with an access_token that cannot go in a header` };
  const type = parsed.token_type;
  if (typeof type === 'string' && type.toLowerCase() !== 'bearer') {
    return { ok: false, reason: `token endpoint ${endpoint} issued a token of type ${JSON.stringify(type.slice(0, 40))}; only Bearer tokens are sent` };
  }
  const expiresIn = typeof parsed.expires_in === 'string' ? Number(parsed.expires_in) : parsed.expires_in;
  const lifetimeMs = typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : DEFAULT_TOKEN_LIFETIME_MS;
  return { ok: true, token, useUntilMs: tokenUseEnd(requestedAtMs, lifetimeMs) };
}

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
