// `GET /v1/dead-letters` and `POST /v1/replay` (docs/admin-api.md#get-v1dead-letters):
// a destination's dead letters by page, and their replay with a dry run first, or of one
// letter by its messageId. The same code as `switchyard dlq list` and `switchyard replay`
// (src/delivery/dlq/list-dead-letters.ts, src/delivery/dlq/replay.ts, src/delivery/dlq/replay-one.ts),
// behind the admin token. The answers' types: answers.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { deadLetterFields } from '../delivery/dlq/dead-letters.js';
import type { DeadLetter } from '../delivery/dlq/dead-letters.js';
import type { ListOptions, ListResult } from '../delivery/dlq/list-dead-letters.js';
import type { ReplayOptions } from '../delivery/dlq/replay.js';
import { replayOneLetter } from '../delivery/dlq/replay-one.js';
import { isKafkaClientError } from '../kafka/index.js';
import { Semaphore } from '../delivery/semaphore.js';
import { KafkaUnavailableError, ReplayLedgerFullError } from '../errors.js';
import { authorizeAdmin } from './admin-auth.js';
import type { DeadLettersPage, ReplayAnswer, ReplayOneAnswer } from './answers.js';
import { encodeCursor, parseListQuery, parseReplayRequest, rangeFields } from './letter-query.js';
import type { ReplayRequest } from './letter-query.js';
import { readBody, send } from './respond.js';

export const DEAD_LETTERS_PATH = '/v1/dead-letters';
export const REPLAY_PATH = '/v1/replay';

/** The operator commands' code, bound to this process's Kafka and running config. */
export interface LetterHandlers {
  destinations(): string[];
  list(options: ListOptions): Promise<ListResult>;
  replay(options: ReplayOptions): Promise<number>;
}

export interface DeadLettersRouteOptions {
  token: () => string | undefined;
  letters: LetterHandlers | undefined;
  logger: Logger;
  nowMs?: () => number;
}

const MAX_REPLAY_BODY_BYTES = 4 * 1024;

/** Lists waiting or running at once; more are answered 429 (see createDeadLettersRoute). */
const MAX_QUEUED_LISTS = 4;

/**
 * Answers requests on DEAD_LETTERS_PATH and REPLAY_PATH. NOTE: one replay at a time per
 * process: two replays of one destination would share its replay group. The guard is
 * taken before the first `await` (the body's read), so two replays whose bodies arrive
 * late cannot both pass it. NOTE: one list at a time per process, the next few waiting
 * their turn: a page reads the dead-letter topic's range on this process's event loop,
 * which also serves the role (lists at once slowed each other and the gateway's answers
 * many times over; figures: docs/benchmarks.md#figures-behind-the-code).
 */
export function createDeadLettersRoute(options: DeadLettersRouteOptions): (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void> {
  let replaying = false;
  const listing = new Semaphore(1);
  let lists = 0;
  const now = options.nowMs ?? Date.now;
  return async (req, res, path) => {
    const expected = path === REPLAY_PATH ? 'POST' : 'GET';
    if (req.method !== expected) {
      send(res, 405, { success: false, code: 'method_not_allowed', message: `use ${expected} ${path}` }, { allow: expected });
      return;
    }
    if (!authorizeAdmin(req, res, options.token())) return;
    const letters = options.letters;
    if (letters === undefined) {
      send(res, 503, { success: false, code: 'unavailable', message: 'dead letters are not served by this process' });
      return;
    }
    if (path === DEAD_LETTERS_PATH) {
      if (lists >= MAX_QUEUED_LISTS) {
        send(res, 429, { success: false, code: 'busy', message: `${lists} dead-letter lists are running or waiting in this process; try again when they have answered` }, { 'retry-after': '2' });
        return;
      }
      lists += 1;
      try {
        await listing.acquire(1);
        try {
          await kafkaAnswer(res, options.logger, () => list(req, res, letters, now()));
        } finally {
          listing.release(1);
        }
      } finally {
        lists -= 1;
      }
      return;
    }
    if (replaying) {
      send(res, 429, { success: false, code: 'busy', message: 'a replay is running in this process; try again when it has answered' }, { 'retry-after': '2' });
      return;
    }
    replaying = true;
    try {
      const request = await replayRequest(req, res, letters, now());
      if (request === undefined) return;
      await kafkaAnswer(res, options.logger, () => replay(res, letters, request, options.logger));
    } finally {
      replaying = false;
    }
  };
}

async function list(req: IncomingMessage, res: ServerResponse, letters: LetterHandlers, nowMs: number): Promise<void> {
  const url = req.url ?? '';
  const parsed = parseListQuery(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '', letters.destinations(), nowMs);
  if (!parsed.ok) {
    send(res, 400, { success: false, code: 'invalid_request', message: parsed.message });
    return;
  }
  const { destination, range, limit, after } = parsed.value;
  const page: { letter: DeadLetter; replayed: boolean }[] = [];
  const result = await letters.list({ destinationId: destination, range, limit, after, onLetter: (letter, replayed) => page.push({ letter, replayed }) });
  const last = page.at(-1)?.letter;
  const answer: DeadLettersPage = {
    destination,
    topic: result.topic,
    topicExists: result.topicExists,
    ...rangeFields(range),
    inRange: result.inRange,
    letters: page.map(({ letter, replayed }) => ({ ...deadLetterFields(letter), replayed })),
    nextCursor: last !== undefined && result.remaining > page.length ? encodeCursor(last) : null,
  };
  send(res, 200, answer);
}

async function replayRequest(req: IncomingMessage, res: ServerResponse, letters: LetterHandlers, nowMs: number): Promise<ReplayRequest | undefined> {
  const body = await readBody(req, MAX_REPLAY_BODY_BYTES);
  if (body === undefined) {
    send(res, 413, { success: false, code: 'too_large', message: `replay request over ${MAX_REPLAY_BODY_BYTES} bytes` });
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    send(res, 400, { success: false, code: 'invalid_json', message: 'the body is not JSON: send {"destination": "…", "dryRun": true}' });
    return undefined;
  }
  const parsed = parseReplayRequest(json, letters.destinations(), nowMs);
  if (!parsed.ok) {
    send(res, 400, { success: false, code: 'invalid_request', message: parsed.message });
    return undefined;
  }
  // NOTE: a range open at its end is closed at now, and the answer says so: the confirm
  // after a dry run sends the same bounds back and moves the letters the dry run counted,
  // not those dead-lettered in between.
  const request = parsed.value;
  return request.range.untilMs === undefined ? { ...request, range: { ...request.range, untilMs: nowMs } } : request;
}

async function replay(res: ServerResponse, letters: LetterHandlers, request: ReplayRequest, logger: Logger): Promise<void> {
  const { destination, range, limit, dryRun, messageId } = request;
  if (messageId !== undefined) {
    await replayOne(res, letters, { ...request, messageId }, logger);
    return;
  }
  const count = await letters.replay({ destinationId: destination, range, limit, dryRun });
  logger.info({ destination, dryRun, count, ...rangeFields(range) }, dryRun ? 'replay dry run answered' : 'dead letters replayed');
  const answer: ReplayAnswer = { destination, dryRun, ...rangeFields(range), limit: limit ?? null, count };
  send(res, 200, answer);
}

/**
 * One letter by its messageId: 200 with `count` 1 (moved, or in a dry run found), or 0 and
 * `alreadyReplayed` when an earlier replay moved it; 404 when there is no letter of it.
 */
async function replayOne(res: ServerResponse, letters: LetterHandlers, request: ReplayRequest & { messageId: string }, logger: Logger): Promise<void> {
  const { destination, range, dryRun, messageId } = request;
  const outcome = await replayOneLetter(letters, { destinationId: destination, messageId, range, dryRun });
  if (outcome.kind === 'not_found') {
    const where = outcome.topicExists ? outcome.topic : `${outcome.topic} (the topic does not exist yet)`;
    send(res, 404, { success: false, code: 'not_found', message: `no dead letter with messageId ${JSON.stringify(messageId)} in ${where}: GET /v1/dead-letters lists them` });
    return;
  }
  const moved = outcome.kind === 'moved';
  logger.info({ destination, dryRun, count: moved ? 1 : 0, alreadyReplayed: !moved }, moved ? (dryRun ? 'replay dry run of one letter answered' : 'dead letter replayed') : 'dead letter already replayed; nothing moved');
  const answer: ReplayOneAnswer = { destination, messageId, dryRun, count: moved ? 1 : 0, alreadyReplayed: !moved, letter: deadLetterFields(outcome.letter) };
  send(res, 200, answer);
}

/** Runs `work`; a Kafka that does not answer is a 503 that says so, a replay ledger that is full a 409, not a 500. */
async function kafkaAnswer(res: ServerResponse, logger: Logger, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (error instanceof ReplayLedgerFullError) {
      // Its message names the CLI; the same holds here: a replay without since/until first.
      send(res, 409, { success: false, code: 'replay_ledger_full', message: `${error.message} (here: POST /v1/replay without since and until)` });
      return;
    }
    if (!(error instanceof KafkaUnavailableError) && !isKafkaClientError(error)) throw error;
    logger.warn({ err: error }, 'dead letters: Kafka did not answer');
    // NOTE: the answer quotes no error text of the Kafka client's (broker addresses): the log has it.
    send(res, 503, { success: false, code: 'kafka_unavailable', message: 'Kafka did not answer (the admin server\'s log says why); try again once the brokers are up' }, { 'retry-after': '5' });
  }
}
