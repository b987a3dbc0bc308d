// `admin` (docs/configuration.md#admin): where the admin API listens, its token, and the
// `Host` names it answers.

import { isLoopbackHost, parseIpAddress } from '../../network/address-rule.js';
import { checkList, checkText } from './basic-checks.js';
import { describe, fail, ok } from './check.js';
import type { Checked } from './check.js';
import { field, nonEmptyText, port, secretText, strictObject } from './zod-fields.js';

export interface AdminConfig {
  port: number;
  host: string;
  token?: string;
  /** `Host` names answered besides loopback and this pod's own (src/admin/allowed-hosts.ts). */
  allowedHosts: string[];
}

/** The admin port listens on loopback unless `admin.host` says otherwise (docs/configuration.md#admin). */
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
/** The shortest admin token accepted on a host other machines can reach. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * Why `token` cannot guard an admin port bound to `host`, or undefined. On loopback any
 * token (or none) will do; elsewhere anyone who reaches the port can try it, so it must
 * be long and not a placeholder printed in the examples. NOTE: the token is not quoted.
 */
function adminTokenProblem(host: string, token: string | undefined): string | undefined {
  if (token === undefined || isLoopbackHost(host)) return undefined;
  const where = `admin.host is ${JSON.stringify(host)}, reachable from other machines`;
  const generate = 'generate one with `openssl rand -hex 32`, or bind the admin port to 127.0.0.1';
  if (token === 'dev-admin-token' || /^change-?me/i.test(token)) {
    return `is a placeholder from the examples and ${where}: set a token of your own; ${generate}`;
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
    return `is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters and ${where}: anyone who reaches the port could guess it; ${generate}`;
  }
  return undefined;
}

/** An entry of `admin.allowedHosts`: a name as a `Host` header carries it, without the port. */
function checkHostName(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  if (!/^[A-Za-z0-9._-]+$/.test(text.value) && parseIpAddress(text.value) === undefined) {
    return fail(`${describe(value)} is not a host name: give the name a client puts in the Host header, without scheme, port or path (e.g. switchyard-admin.monitoring.svc)`);
  }
  return ok(text.value.toLowerCase());
}
checkHostName.input = checkText.input;

/** `admin`; its default is applied by the root schema. */
export const adminSchema = strictObject({
  port: port.prefault(9464),
  host: nonEmptyText.prefault(DEFAULT_ADMIN_HOST),
  token: secretText.optional(),
  allowedHosts: field(checkList(checkHostName)).prefault([]),
}).superRefine((admin, ctx) => {
  const problem = adminTokenProblem(admin.host, admin.token);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, path: ['token'] });
});
