// A destination's `settings.webhooks`: its URLs and their static headers, and the header
// names Switchyard keeps for itself (docs/webhooks.md).

import { checkText } from './basic-checks.js';
import { anyCase, describe, describeSecret, fail, isPlainObject, ok, orFromEnv, SENSITIVE_NAME } from './check.js';
import type { Checked, Problem } from './check.js';
import { field, strictObject } from './zod-fields.js';

export interface WebhookEntry {
  url: string;
  headers: Record<string, string>;
}

/** The seed allows up to five webhook URLs per destination. */
export const MAX_WEBHOOKS = 5;

/**
 * Header names a webhook entry may not set, lower-cased. The first group Switchyard
 * sets itself on every request (docs/webhooks.md): a static value would either be ignored or
 * break the receiver's signature check. The second group is managed by undici, which
 * throws on them at request time; refusing them at load beats failing every delivery.
 */
export const RESERVED_HEADER_NAMES: ReadonlyMap<string, string> = new Map([
  ['content-type', 'set by Switchyard on every request'],
  ['content-length', 'set by Switchyard on every request'],
  ['host', 'set by Switchyard on every request'],
  ['user-agent', 'set by Switchyard on every request'],
  ['x-signature', 'set by Switchyard on every request'],
  ['traceparent', 'set by Switchyard on every request'],
  ['webhook-id', 'set by Switchyard with signing: standard'],
  ['webhook-timestamp', 'set by Switchyard with signing: standard'],
  ['webhook-signature', 'set by Switchyard with signing: standard'],
  ['connection', 'managed by the HTTP client'],
  ['keep-alive', 'managed by the HTTP client'],
  ['transfer-encoding', 'managed by the HTTP client'],
  ['upgrade', 'managed by the HTTP client'],
  ['expect', 'managed by the HTTP client'],
]);

export function checkWebhookUrl(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  // NOTE: the URL is not quoted: its user info, path or query may hold a token.
  const expected = 'must be an absolute http:// or https:// URL';
  // NOTE: the WHATWG parser accepts "http:host" and "http:/host" for special schemes;
  // insisting on the literal "//" keeps the URL what the operator sees.
  if (!/^https?:\/\//i.test(text.value)) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text.value)?.[1];
    return fail(scheme !== undefined ? `${expected}, not ${JSON.stringify(`${scheme}://`)}` : `${expected}; add the scheme, e.g. https://<host>/<path>`);
  }
  let url: URL;
  try {
    url = new URL(text.value);
  } catch {
    return fail(`${expected}; it does not parse as a URL`);
  }
  if (url.hostname === '') return fail(`${expected}; it has no host`);
  // Kept as written: docs/webhooks.md posts to "<url as configured>".
  return ok(text.value);
}
checkWebhookUrl.input = orFromEnv({
  type: 'string',
  pattern: `^${anyCase('http')}[Ss]?://[^/?#\\s]`,
  description: 'an absolute http:// or https:// URL',
});

/** RFC 7230 `token`: the characters a header field name may contain. */
const HEADER_NAME_PATTERN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function headerValueProblem(value: string): string | undefined {
  if (value.includes('\r')) return 'contains a carriage return (CR)';
  if (value.includes('\n')) return 'contains a line feed (LF)';
  if (value.includes('\0')) return 'contains a NUL character';
  // undici refuses other control characters and anything outside Latin-1 at send time.
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) return 'contains a control character or a character outside Latin-1';
  return undefined;
}

function checkHeaders(value: unknown): Checked<Record<string, string>> {
  if (value === undefined || value === null) return ok({});
  if (!isPlainObject(value)) {
    return fail(`must be a mapping of header name to value, e.g. { X-Team: growth }, got ${describe(value)}`);
  }
  const problems: Problem[] = [];
  const seen = new Map<string, string>();
  for (const [name, headerValue] of Object.entries(value)) {
    const lower = name.toLowerCase();
    const reserved = RESERVED_HEADER_NAMES.get(lower);
    if (!HEADER_NAME_PATTERN.test(name)) {
      problems.push({
        path: [name],
        message: `${JSON.stringify(name)} is not a legal HTTP header name; use letters, digits and !#$%&'*+-.^_\`|~ only, no spaces`,
      });
    } else if (reserved !== undefined) {
      problems.push({ path: [name], message: `header ${JSON.stringify(name)} is reserved (${reserved}); remove it` });
    } else if (seen.has(lower)) {
      problems.push({
        path: [name],
        message: `header ${JSON.stringify(name)} is also given as ${JSON.stringify(seen.get(lower))}; header names are case-insensitive, keep one`,
      });
    }
    seen.set(lower, name);
    if (typeof headerValue !== 'string') {
      const got = SENSITIVE_NAME.test(name) ? describeSecret(headerValue) : describe(headerValue);
      problems.push({ path: [name], message: `header value must be a string, got ${got}; quote it in YAML` });
      continue;
    }
    const bad = headerValueProblem(headerValue);
    if (bad !== undefined) {
      problems.push({ path: [name], message: `header value ${bad}; a header value must be one line without CR, LF or NUL` });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : ok(value as Record<string, string>);
}
checkHeaders.input = {
  type: ['object', 'null'],
  propertyNames: {
    pattern: HEADER_NAME_PATTERN.source,
    not: { pattern: `^(${[...RESERVED_HEADER_NAMES.keys()].map(anyCase).join('|')})$` },
  },
  additionalProperties: { type: 'string', pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$' },
  description: 'static headers: header name to value; Switchyard sets Content-Type, Content-Length, Host, User-Agent, X-Signature and traceparent itself',
};

export function checkHeaderName(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  if (!HEADER_NAME_PATTERN.test(text.value)) return fail(`${describe(value)} is not a legal HTTP header name; use letters, digits and !#$%&'*+-.^_\`|~ only, no spaces`);
  return ok(text.value);
}
checkHeaderName.input = { type: 'string', pattern: HEADER_NAME_PATTERN.source };

export const webhookSchema = strictObject({
  url: field(checkWebhookUrl),
  headers: field(checkHeaders).prefault({}),
});
