/**
 * Write keys: how a request says which source it comes from (docs/http-api.md) — HTTP
 * Basic with the write key as user name and an empty password (what Segment's
 * libraries send), or a `writeKey` field in the body.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Config } from '../config/schema.js';

export type AuthorizationHeader =
  | { kind: 'absent' }
  | { kind: 'write-key'; writeKey: string }
  | { kind: 'unusable'; message: string };

/**
 * Reads the `Authorization` header. Only the Basic user name is used: the password
 * is ignored (Segment's libraries send an empty one), and a value without a colon is
 * taken as the user name alone.
 */
export function readAuthorization(header: string | undefined): AuthorizationHeader {
  if (header === undefined || header.trim() === '') return { kind: 'absent' };
  const match = /^\s*basic\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) {
    const scheme = /^\s*(\S+)/.exec(header)?.[1] ?? '';
    return {
      kind: 'unusable',
      message: `the Authorization header uses the "${scheme.slice(0, 20)}" scheme: send "Basic base64(<write key>:)" (the write key as user name, an empty password), or leave the header out and put "writeKey" in the body`,
    };
  }
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  if (user === '') {
    return {
      kind: 'unusable',
      message: 'the Authorization header has an empty Basic user name: put the write key in the user name (base64 of "<write key>:")',
    };
  }
  return { kind: 'write-key', writeKey: user };
}

/** How a request's `Authorization` header places it, before any shared resource is taken. */
export type HeaderAuthorization =
  /** A known write key: the request is the source's. */
  | { kind: 'source'; sourceId: string }
  /** No header: the write key may be in the body (read with the small pool of such requests). */
  | { kind: 'in-body' }
  /** An unusable header or an unknown key: answered 401 at once. */
  | { kind: 'refused'; message: string };

export const UNKNOWN_WRITE_KEY =
  "unknown write key: no source in the Switchyard config has this writeKey; check the client's write key against sources[].writeKey";

/**
 * Where a request's `Authorization` header puts it (docs/http-api.md#authentication).
 * NOTE: checked before the request takes an in-flight slot or its body is read: a caller
 * without a valid key costs nothing shared (docs/operations.md#security).
 */
export function authorizeHeader(config: Config, header: string | undefined): HeaderAuthorization {
  const auth = readAuthorization(header);
  if (auth.kind === 'unusable') return { kind: 'refused', message: auth.message };
  if (auth.kind === 'absent') return { kind: 'in-body' };
  const sourceId = sourceIdForWriteKey(config, auth.writeKey);
  return sourceId === undefined ? { kind: 'refused', message: UNKNOWN_WRITE_KEY } : { kind: 'source', sourceId };
}

/**
 * NOTE: write keys are looked up by their HMAC under a key made at process start, not
 * as they are: a Map's lookup takes longer the more of a string matches, and on digests
 * of a key the caller does not know, that time says nothing about how much of a write
 * key a guess got right. One HMAC-SHA256 per request (about a microsecond).
 */
const LOOKUP_KEY = randomBytes(32);

function lookupDigest(writeKey: string): string {
  return createHmac('sha256', LOOKUP_KEY).update(writeKey, 'utf8').digest('base64');
}

// One index per config object: config reloads swap the whole object, so a reload
// is picked up by the next request without any listener.
const indexes = new WeakMap<Config, ReadonlyMap<string, string>>();

/** The id of the source whose `writeKey` this is, in the live config, or undefined. */
export function sourceIdForWriteKey(config: Config, writeKey: string): string | undefined {
  let index = indexes.get(config);
  if (index === undefined) {
    const map = new Map<string, string>();
    for (const source of config.sources) {
      if (source.writeKey !== undefined && source.writeKey !== '') map.set(lookupDigest(source.writeKey), source.id);
    }
    index = map;
    indexes.set(config, index);
  }
  return writeKey === '' ? undefined : index.get(lookupDigest(writeKey));
}
