// Secrets in the config, for printing it (`check-config`) and for scrubbing logs
// (docs/operations.md#security). One walk finds them for both uses, so the two lists
// cannot drift apart. Webhook URLs are printed as their origin without user info
// (`webhookLabel`): user info, path and query often carry a token (Slack's
// `/services/T…/B…/secret`, `?sig=…`).

import { SENSITIVE_NAME } from './schema.js';
import type { Config, ProxyConfig } from './schema.js';

export const MASK = '****';

/**
 * Secrets shorter than this are never searched for in log text (masking every "abc" of
 * a line would garble the logs, and a short secret shows up by chance): they are
 * masked by the name of the field that holds them (the logger's redact paths), and
 * `check-config` warns about them.
 */
export const MIN_SCRUBBED_SECRET_LENGTH = 8;

/** TLS options (as Node's tls.connect takes them) that hold private material. */
const SSL_SECRET_KEYS = new Set(['key', 'cert', 'passphrase', 'pfx']);

/** A secret and where it is in the config (`sources[0].writeKey`), for warnings that must not quote it. */
export interface FoundSecret {
  path: string;
  value: string;
}

/** A webhook URL as it may be printed: its origin, without user info, path or query. */
export function printableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    // URL.origin never holds user info; it is "null" for schemes the config refuses.
    return parsed.origin === 'null' ? '(a URL that is not http or https)' : parsed.origin;
  } catch {
    return '(a URL that does not parse)';
  }
}

/** How a URL of a destination is named in logs, dead letters and errors: `webhooks[1] https://hooks.example.com`. */
export function webhookLabel(index: number, url: string): string {
  return `webhooks[${index}] ${printableUrl(url)}`;
}

function stringsIn(value: unknown, path: string, out: FoundSecret[]): void {
  if (typeof value === 'string') {
    if (value !== '') out.push({ path, value });
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => stringsIn(item, `${path}[${i}]`, out));
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) stringsIn(item, `${path}.${key}`, out);
  }
}

/** Every part of a URL that may be secret: user info, path, query, each query value (raw and decoded). */
function urlSecrets(text: string, path: string, out: FoundSecret[]): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    out.push({ path, value: text });
    return;
  }
  const add = (value: string) => {
    if (value === '' || value === '/') return;
    out.push({ path, value });
    try {
      const decoded = decodeURIComponent(value);
      if (decoded !== value) out.push({ path, value: decoded });
    } catch {
      // not percent-encoded text: the raw form is enough
    }
  };
  add(url.username);
  add(url.password);
  add(url.pathname);
  add(`${url.pathname}${url.search}`);
  add(url.search.slice(1));
  add(url.hash.slice(1));
  // Each query value as written (add() puts the decoded form beside it).
  for (const pair of url.search.slice(1).split('&')) if (pair.includes('=')) add(pair.slice(pair.indexOf('=') + 1));
}

/** The URL as check-config prints it: its origin, and `/****` when anything else was hidden. */
function maskedUrl(text: string): string {
  const origin = printableUrl(text);
  try {
    const url = new URL(text);
    const hidden = url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '';
    return hidden ? `${origin}/${MASK}` : origin;
  } catch {
    return origin;
  }
}

/** Replaces every secret in `copy` (a deep copy of a Config) and returns the originals with their paths. */
function maskInPlace(copy: Config): FoundSecret[] {
  const found: FoundSecret[] = [];
  const take = <T>(value: T, path: string): T | typeof MASK => {
    stringsIn(value, path, found);
    return MASK;
  };

  if (copy.admin.token !== undefined) copy.admin.token = take(copy.admin.token, 'admin.token');
  if (copy.kafka.sasl !== undefined) copy.kafka.sasl.password = take(copy.kafka.sasl.password, 'kafka.sasl.password');
  const ssl = copy.kafka.ssl;
  if (typeof ssl === 'object') {
    for (const key of Object.keys(ssl)) {
      if (SSL_SECRET_KEYS.has(key) && ssl[key] !== undefined) ssl[key] = take(ssl[key], `kafka.ssl.${key}`);
    }
  }
  if (copy.delivery.proxy !== undefined) maskProxy(copy.delivery.proxy, 'delivery.proxy', found);
  copy.sources.forEach((source, i) => {
    if (source.writeKey !== undefined) source.writeKey = take(source.writeKey, `sources[${i}].writeKey`);
  });
  copy.operations.webhooks.forEach((webhook, i) => {
    webhook.secret = take(webhook.secret, `operations.webhooks[${i}].secret`);
    urlSecrets(webhook.url, `operations.webhooks[${i}].url`, found);
    webhook.url = maskedUrl(webhook.url);
  });
  copy.destinations.forEach((destination, i) => {
    const settings = destination.settings;
    const at = `destinations[${i}].settings`;
    if (settings.sharedSecret !== undefined) settings.sharedSecret = take(settings.sharedSecret, `${at}.sharedSecret`);
    if (settings.sharedSecrets !== undefined) settings.sharedSecrets = settings.sharedSecrets.map((secret, j) => take(secret, `${at}.sharedSecrets[${j}]`));
    maskAuth(settings, at, take, found);
    if (settings.proxy !== undefined) maskProxy(settings.proxy, `${at}.proxy`, found);
    if (settings.tls?.material !== undefined) {
      // The PEM text is not config the operator wrote: only its key is a secret (for the log scrubber).
      if (settings.tls.material.key !== undefined) stringsIn(settings.tls.material.key, `${at}.tls.clientKey`, found);
      delete settings.tls.material;
    }
    if (settings.signature?.secret !== undefined) settings.signature.secret = take(settings.signature.secret, `${at}.signature.secret`);
    const cluster = settings.cluster;
    if (cluster?.sasl !== undefined) cluster.sasl.password = take(cluster.sasl.password, `${at}.cluster.sasl.password`);
    if (typeof cluster?.tls === 'object') {
      const tls = cluster.tls;
      for (const key of Object.keys(tls)) if (SSL_SECRET_KEYS.has(key) && tls[key] !== undefined) tls[key] = take(tls[key], `${at}.cluster.tls.${key}`);
    }
    for (const [name, value] of Object.entries(settings.headers ?? {})) {
      if (SENSITIVE_NAME.test(name)) settings.headers![name] = take(value, `${at}.headers.${name}`);
    }
    settings.webhooks.forEach((webhook, j) => {
      urlSecrets(webhook.url, `${at}.webhooks[${j}].url`, found);
      webhook.url = maskedUrl(webhook.url);
      for (const [name, value] of Object.entries(webhook.headers)) {
        if (SENSITIVE_NAME.test(name)) webhook.headers[name] = take(value, `${at}.webhooks[${j}].headers.${name}`);
      }
    });
  });
  return found;
}

/** A proxy URL's user info is its password: printed as the origin, as a webhook URL is. */
function maskProxy(proxy: ProxyConfig, at: string, found: FoundSecret[]): void {
  urlSecrets(proxy.url, `${at}.url`, found);
  proxy.url = maskedUrl(proxy.url);
}

/** `settings.auth`: the password, the token, the client secret; the token URL cut as a webhook URL is. */
function maskAuth(settings: Config['destinations'][number]['settings'], at: string, take: <T>(value: T, path: string) => T | typeof MASK, found: FoundSecret[]): void {
  const { auth } = settings;
  if (auth === undefined) return;
  if ('basic' in auth) auth.basic.password = take(auth.basic.password, `${at}.auth.basic.password`);
  else if ('bearer' in auth) auth.bearer.token = take(auth.bearer.token, `${at}.auth.bearer.token`);
  else {
    auth.oauth2.clientSecret = take(auth.oauth2.clientSecret, `${at}.auth.oauth2.clientSecret`);
    urlSecrets(auth.oauth2.tokenUrl, `${at}.auth.oauth2.tokenUrl`, found);
    auth.oauth2.tokenUrl = maskedUrl(auth.oauth2.tokenUrl);
  }
}

/** A deep copy of `config` for printing, with every secret replaced by "****" and URLs cut to their origin. */
export function maskConfig(config: Config): unknown {
  const copy = structuredClone(config);
  maskInPlace(copy);
  return copy;
}

/**
 * The secret values in `config`, for redacting logs. Longest first, so a redactor
 * that replaces them in order never leaves part of a longer secret behind.
 */
export function secretsOf(config: Config): string[] {
  const found = maskInPlace(structuredClone(config)).map((secret) => secret.value);
  return [...new Set(found)].sort((a, b) => b.length - a.length);
}

/** Secrets too short to be searched for in logs (MIN_SCRUBBED_SECRET_LENGTH), with where they are. */
export function shortSecretsOf(config: Config): FoundSecret[] {
  return maskInPlace(structuredClone(config)).filter((secret) => secret.value.length < MIN_SCRUBBED_SECRET_LENGTH && !secret.path.endsWith('.url') && !secret.path.endsWith('.tokenUrl'));
}

/**
 * The secret values of a config document before it is checked (any shape, any type):
 * what a message about the document must not quote. Scalars at secret paths (numbers
 * too: `password: 98765432`), the secret parts of webhook URLs; each also as JSON
 * quotes it. Longest first.
 */
export function secretTextsOf(raw: unknown): string[] {
  const found: FoundSecret[] = [];
  const scalar = (value: unknown, path: string) => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint') stringsIn(String(value), path, found);
    else if (Array.isArray(value)) value.forEach((item, i) => scalar(item, `${path}[${i}]`));
  };
  const doc = record(raw);
  const kafka = record(doc.kafka);
  scalar(record(doc.admin).token, 'admin.token');
  scalar(record(kafka.sasl).password, 'kafka.sasl.password');
  const ssl = record(kafka.ssl);
  for (const key of SSL_SECRET_KEYS) scalar(ssl[key], `kafka.ssl.${key}`);
  list(doc.sources).forEach((source, i) => scalar(record(source).writeKey, `sources[${i}].writeKey`));
  list(record(doc.operations).webhooks).forEach((webhook, i) => scalar(record(webhook).secret, `operations.webhooks[${i}].secret`));
  list(doc.destinations).forEach((destination, i) => {
    const settings = record(record(destination).settings);
    scalar(settings.sharedSecret, 'sharedSecret');
    scalar(settings.sharedSecrets, 'sharedSecrets');
    scalar(record(settings.signature).secret, 'signature.secret');
    const cluster = record(settings.cluster);
    scalar(record(cluster.sasl).password, 'cluster.sasl.password');
    const clusterTls = record(cluster.tls);
    for (const key of SSL_SECRET_KEYS) scalar(clusterTls[key], `cluster.tls.${key}`);
    for (const [name, value] of Object.entries(record(settings.headers))) if (SENSITIVE_NAME.test(name)) scalar(value, name);
    const auth = record(settings.auth);
    scalar(record(auth.basic).password, 'auth.basic.password');
    scalar(record(auth.bearer).token, 'auth.bearer.token');
    const oauth2 = record(auth.oauth2);
    scalar(oauth2.clientSecret, 'auth.oauth2.clientSecret');
    if (typeof oauth2.tokenUrl === 'string') urlSecrets(oauth2.tokenUrl, `destinations[${i}].settings.auth.oauth2.tokenUrl`, found);
    list(settings.webhooks).forEach((webhook, j) => {
      const { url, headers } = record(webhook);
      if (typeof url === 'string') urlSecrets(url, `destinations[${i}].settings.webhooks[${j}].url`, found);
      for (const [name, value] of Object.entries(record(headers))) if (SENSITIVE_NAME.test(name)) scalar(value, name);
    });
  });
  const texts = new Set<string>();
  for (const { value } of found) texts.add(value).add(JSON.stringify(value).slice(1, -1));
  return [...texts].sort((a, b) => b.length - a.length);
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
