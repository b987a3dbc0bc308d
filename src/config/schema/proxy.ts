// `proxy` (docs/webhooks.md#egress-proxy): in `delivery` for every destination, in a
// destination's settings for its own requests.

import { checkText } from './basic-checks.js';
import { anyCase, fail, ok, orFromEnv } from './check.js';
import type { Checked } from './check.js';
import { field, idList, strictObject } from './zod-fields.js';

/** `delivery.proxy`, `settings.proxy`: requests go through this HTTP proxy (HTTPS by CONNECT), except to hosts in `noProxy`. */
export interface ProxyConfig {
  url: string;
  /** Host names (a leading `.` or `*.` for every subdomain), `host:port`, or `*`; as NO_PROXY is read. */
  noProxy: string[];
  /** Set by the loader when the proxy came from HTTPS_PROXY / HTTP_PROXY / NO_PROXY rather than the file. */
  fromEnvironment?: true;
}

function checkProxyUrl(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  let url: URL;
  try {
    url = new URL(text.value);
  } catch {
    return fail('must be the proxy as an absolute URL, e.g. http://proxy.internal:3128; it does not parse');
  }
  // NOTE: not quoted: the user info may hold the proxy's password.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(`must be an http:// or https:// URL of the proxy, not ${JSON.stringify(url.protocol)}; e.g. http://proxy.internal:3128`);
  return ok(text.value);
}
checkProxyUrl.input = orFromEnv({ type: 'string', pattern: `^${anyCase('http')}[Ss]?://`, description: 'the proxy: an absolute http:// or https:// URL' });

export const proxySchema = strictObject({
  url: field(checkProxyUrl),
  noProxy: idList.prefault([]),
}).transform((p): ProxyConfig => ({ url: p.url, noProxy: p.noProxy }));
