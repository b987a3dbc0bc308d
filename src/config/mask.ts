// Secrets in the config, for printing it (`check-config`) and for scrubbing logs.
// One walk finds them for both uses, so the two lists cannot drift apart.

import type { Config } from './schema.js';

export const MASK = '****';

/** TLS options (as kafkajs passes them to tls.connect) that hold private material. */
const SSL_SECRET_KEYS = new Set(['key', 'cert', 'passphrase', 'pfx']);

/**
 * Static webhook headers that look like credentials (`Authorization`, `X-Api-Key`,
 * `X-Auth-Token`, ...). Receivers often authenticate with one of these instead of the
 * signature; masking a harmless header by mistake costs less than printing a token.
 */
const SENSITIVE_NAME = /auth|token|secret|key|passw|cookie|session|credential|signature/i;

function stringsIn(value: unknown, out: string[]): void {
  if (typeof value === 'string') {
    if (value !== '') out.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) stringsIn(item, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) stringsIn(item, out);
  }
}

/** `https://user:pass@host/x?token=t` → `https://user:****@host/x?token=****`, collecting the secrets. */
function maskUrl(text: string, found: string[]): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return text;
  }
  let changed = false;
  if (url.password !== '') {
    found.push(url.password, decodeURIComponent(url.password));
    url.password = MASK;
    changed = true;
  }
  for (const [name, value] of [...url.searchParams]) {
    if (value !== '' && SENSITIVE_NAME.test(name)) {
      found.push(value, encodeURIComponent(value));
      url.searchParams.set(name, MASK);
      changed = true;
    }
  }
  // Only re-serialize when something was masked: URL normalizes what it prints.
  return changed ? url.toString() : text;
}

/** Replaces every secret in `copy` (a deep copy of a Config) and returns the originals. */
function maskInPlace(copy: Config): string[] {
  const found: string[] = [];
  const take = <T>(value: T): T | typeof MASK => {
    stringsIn(value, found);
    return MASK;
  };

  if (copy.admin.token !== undefined) copy.admin.token = take(copy.admin.token);
  if (copy.kafka.sasl !== undefined) copy.kafka.sasl.password = take(copy.kafka.sasl.password);
  const ssl = copy.kafka.ssl;
  if (typeof ssl === 'object') {
    for (const key of Object.keys(ssl)) {
      if (SSL_SECRET_KEYS.has(key) && ssl[key] !== undefined) ssl[key] = take(ssl[key]);
    }
  }
  for (const source of copy.sources) {
    if (source.writeKey !== undefined) source.writeKey = take(source.writeKey);
  }
  for (const destination of copy.destinations) {
    const settings = destination.settings;
    if (settings.sharedSecret !== undefined) settings.sharedSecret = take(settings.sharedSecret);
    if (settings.sharedSecrets !== undefined) settings.sharedSecrets = settings.sharedSecrets.map(take);
    for (const webhook of settings.webhooks) {
      webhook.url = maskUrl(webhook.url, found);
      for (const [name, value] of Object.entries(webhook.headers)) {
        if (SENSITIVE_NAME.test(name)) webhook.headers[name] = take(value);
      }
    }
  }
  return found;
}

/** A deep copy of `config` for printing, with every secret replaced by "****". */
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
  const found = maskInPlace(structuredClone(config));
  return [...new Set(found)].sort((a, b) => b.length - a.length);
}
