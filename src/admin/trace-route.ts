// `GET /v1/trace` (docs/admin-api.md#get-v1trace): the `switchyard trace --json` document
// of a user's calls, behind the admin token. The user id is a query parameter and goes
// nowhere else: not into the logs, not into a metric.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { KafkaUnavailableError } from '../errors.js';
import type { TraceResult } from '../trace/trace.js';
import { API_FIELD_NAMES, parseTraceQuery } from '../trace/trace-query.js';
import type { TraceQuery, TraceQueryFields } from '../trace/trace-query.js';
import { authorizeAdmin } from './admin-auth.js';
import { send } from './respond.js';

/** Runs one trace (src/trace/trace.ts, with the running config). */
export type TraceHandler = (query: TraceQuery) => Promise<TraceResult>;

export const TRACE_PATH = '/v1/trace';

/** The header that carries each note of the answer (a window cut short by retention …), one header line per note. */
export const TRACE_NOTE_HEADER = 'switchyard-trace-note';

const PARAMETERS = new Set<string>(Object.values(API_FIELD_NAMES));

export interface TraceRouteOptions {
  token: () => string | undefined;
  trace: TraceHandler | undefined;
  logger: Logger;
  nowMs?: () => number;
}

/**
 * Answers a request on TRACE_PATH, whatever its method. NOTE: one trace at a time per
 * process: a trace reads and decodes whole partitions on this process's event loop,
 * which also serves the role (a deliverer's lanes, a gateway's requests).
 */
export function createTraceRoute(options: TraceRouteOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  let running = false;
  return async (req, res) => {
    if (req.method !== 'GET') {
      send(res, 405, { success: false, code: 'method_not_allowed', message: 'use GET /v1/trace?userId=…' });
      return;
    }
    if (!authorizeAdmin(req, res, options.token())) return;
    if (!options.trace) {
      send(res, 503, { success: false, code: 'unavailable', message: 'traces are not served by this process' });
      return;
    }
    const parsed = parseQuery(req.url ?? '', (options.nowMs ?? Date.now)());
    if (!parsed.ok) {
      send(res, 400, { success: false, code: 'invalid_request', message: parsed.message });
      return;
    }
    if (running) {
      send(res, 429, { success: false, code: 'busy', message: 'a trace is running in this process; try again when it has answered' }, { 'retry-after': '2' });
      return;
    }
    running = true;
    try {
      await answer(res, options, parsed.query);
    } finally {
      running = false;
    }
  };
}

async function answer(res: ServerResponse, options: TraceRouteOptions, query: TraceQuery): Promise<void> {
  const started = Date.now();
  let result: TraceResult;
  try {
    result = await options.trace!(query);
  } catch (error) {
    if (!(error instanceof KafkaUnavailableError)) throw error;
    options.logger.warn({ err: error }, 'trace failed: Kafka did not answer');
    // NOTE: the answer quotes no error text of the Kafka client's (broker addresses): the log has it.
    send(res, 503, { success: false, code: 'kafka_unavailable', message: 'Kafka did not answer (the admin server\'s log says why); try again once the brokers are up' }, { 'retry-after': '5' });
    return;
  }
  // NOTE: counts only; the query's user id stays out of the log.
  options.logger.info({ messages: result.document.messages.length, scanned: result.scanned, ms: Date.now() - started }, 'trace answered');
  if (result.notes.length > 0) res.setHeader(TRACE_NOTE_HEADER, result.notes);
  send(res, 200, result.document);
}

/** The query string as a trace query; one value per parameter, and only the documented ones. */
function parseQuery(url: string, nowMs: number): { ok: true; query: TraceQuery } | { ok: false; message: string } {
  const params = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const fields: TraceQueryFields = {};
  for (const name of new Set(params.keys())) {
    if (!PARAMETERS.has(name)) return { ok: false, message: `unknown parameter ${JSON.stringify(name)}: the parameters are userId or anonymousId, messageId, since, until` };
    const values = params.getAll(name);
    if (values.length > 1) return { ok: false, message: `parameter ${name} is given ${values.length} times: give it once` };
    fields[name as keyof TraceQueryFields] = values[0];
  }
  const parsed = parseTraceQuery(fields, API_FIELD_NAMES, nowMs);
  return parsed.ok ? parsed : { ok: false, message: parsed.message };
}
