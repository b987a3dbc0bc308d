// The admin API's bearer token (docs/admin-api.md): every route but /metrics, /healthz
// and /readyz asks for `Authorization: Bearer <admin.token>`.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { send } from './respond.js';

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice('Bearer '.length));
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** True when the request carries the admin token; else answers 503 (no token configured) or 401, and returns false. */
export function authorizeAdmin(req: IncomingMessage, res: ServerResponse, token: string | undefined): boolean {
  if (!token) {
    send(res, 503, { success: false, code: 'admin_disabled', message: 'admin.token is not set in the config; set it to use the admin API' });
    return false;
  }
  if (!tokenMatches(req.headers.authorization, token)) {
    send(res, 401, { success: false, code: 'unauthorized', message: 'send Authorization: Bearer <admin.token>' });
    return false;
  }
  return true;
}
