/**
 * Write keys: how a request says which source it comes from (docs/http-api.md) — HTTP
 * Basic with the write key as user name and an empty password (what Segment's
 * libraries send), or a `writeKey` field in the body.
 */
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

// One index per config object: config reloads swap the whole object, so a reload
// is picked up by the next request without any listener.
const indexes = new WeakMap<Config, ReadonlyMap<string, string>>();

/**
 * The id of the source whose `writeKey` this is, in the live config, or undefined.
 * NOTE: a Map lookup is not constant-time. Write keys identify rather than protect
 * (Segment's own are public in every web page that loads analytics.js), so a timing
 * side channel on them is not worth a linear scan with timingSafeEqual per request.
 */
export function sourceIdForWriteKey(config: Config, writeKey: string): string | undefined {
  let index = indexes.get(config);
  if (index === undefined) {
    const map = new Map<string, string>();
    for (const source of config.sources) {
      if (source.writeKey !== undefined && source.writeKey !== '') map.set(source.writeKey, source.id);
    }
    index = map;
    indexes.set(config, index);
  }
  return index.get(writeKey);
}
