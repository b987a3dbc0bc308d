// `GET /v1/violations` (docs/admin-api.md#get-v1violations): the tracking-plan violations of a
// window, counted per source and event, with recent examples; what the console's
// violations view shows. Behind the admin token.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { parseTimeBounds } from '../config/time-argument.js';
import { KafkaUnavailableError } from '../errors.js';
import type { ViolationsDocument, ViolationsQuery } from '../trace/recent-violations.js';
import { authorizeAdmin } from './admin-auth.js';
import { send } from './respond.js';

export const VIOLATIONS_PATH = '/v1/violations';

/** Reads the violations of a window (src/trace/recent-violations.ts, with the running config). */
export type ViolationsHandler = (query: ViolationsQuery) => Promise<ViolationsDocument>;

/** Without `since`: the last hour. */
export const DEFAULT_WINDOW_MS = 60 * 60_000;

const PARAMETERS = new Set(['since', 'until', 'source']);

export interface ViolationsRouteOptions {
  token: () => string | undefined;
  violations: ViolationsHandler | undefined;
  logger: Logger;
  nowMs?: () => number;
}

/** Answers a request on VIOLATIONS_PATH. NOTE: one read at a time per process, as for traces (trace-route.ts). */
export function createViolationsRoute(options: ViolationsRouteOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  let running = false;
  return async (req, res) => {
    if (req.method !== 'GET') {
      send(res, 405, { success: false, code: 'method_not_allowed', message: 'use GET /v1/violations?since=1h' }, { allow: 'GET' });
      return;
    }
    if (!authorizeAdmin(req, res, options.token())) return;
    if (!options.violations) {
      send(res, 503, { success: false, code: 'unavailable', message: 'violations are not served by this process' });
      return;
    }
    const parsed = parseQuery(req.url ?? '', (options.nowMs ?? Date.now)());
    if (!parsed.ok) {
      send(res, 400, { success: false, code: 'invalid_request', message: parsed.message });
      return;
    }
    if (running) {
      send(res, 429, { success: false, code: 'busy', message: 'a read of violations is running in this process; try again when it has answered' }, { 'retry-after': '2' });
      return;
    }
    running = true;
    try {
      send(res, 200, await options.violations(parsed.query));
    } catch (error) {
      if (!(error instanceof KafkaUnavailableError)) throw error;
      options.logger.warn({ err: error }, 'violations not read: Kafka did not answer');
      send(res, 503, { success: false, code: 'kafka_unavailable', message: error.message }, { 'retry-after': '5' });
    } finally {
      running = false;
    }
  };
}

function parseQuery(url: string, nowMs: number): { ok: true; query: ViolationsQuery } | { ok: false; message: string } {
  const params = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const values: Record<string, string> = {};
  for (const name of new Set(params.keys())) {
    if (!PARAMETERS.has(name)) return { ok: false, message: `unknown parameter ${JSON.stringify(name)}: the parameters are since, until, source` };
    const all = params.getAll(name);
    if (all.length > 1) return { ok: false, message: `parameter ${name} is given ${all.length} times: give it once` };
    values[name] = all[0]!;
  }
  const bounds = parseTimeBounds({ since: values.since, until: values.until }, nowMs, (bound) => bound);
  if (!bounds.ok) return bounds;
  const query: ViolationsQuery = { sinceMs: bounds.value.sinceMs ?? nowMs - DEFAULT_WINDOW_MS };
  if (bounds.value.untilMs !== undefined) query.untilMs = bounds.value.untilMs;
  if (values.source !== undefined && values.source !== '') query.source = values.source;
  return { ok: true, query };
}
