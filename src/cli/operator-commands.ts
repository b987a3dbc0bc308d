// `switchyard dlq list`, `switchyard replay` and `switchyard trace`: what they print and how they exit.
import { listDeadLetters } from '../delivery/dlq/list-dead-letters.js';
import { replayDeadLetters } from '../delivery/dlq/replay.js';
import { replayOneLetter } from '../delivery/dlq/replay-one.js';
import type { LetterOperations } from '../delivery/dlq/replay-one.js';
import { formatTimestamp } from '../calls/index.js';
import { replayBlockedCalls } from '../router/replay-blocked.js';
import { deadLetterJson, deadLetterLine } from '../delivery/dlq/dead-letters.js';
import type { RoleDeps } from '../runtime/deps.js';
import { traceUser } from '../trace/trace.js';
import { traceText } from '../trace/trace-document.js';
import type { TraceQuery } from '../trace/trace-query.js';
import type { Invocation, LetterQuery } from './args.js';
import type { LineOutput } from './output.js';
import { describeTimeRange } from './time-range.js';

export interface CommandIo {
  stdout: LineOutput;
  stderr: LineOutput;
}

/** Prints each dead letter in the range, oldest first (a line, or JSON with `--json`), then how many (to stderr with `--json`). */
export async function runDlqList(deps: RoleDeps, query: LetterQuery, json: boolean, io: CommandIo): Promise<number> {
  const result = await listDeadLetters(deps, {
    destinationId: query.destination,
    range: query.range,
    limit: query.limit,
    shouldStop: io.stdout.closed,
    onLetter: (letter, replayed) => io.stdout.write(`${json ? deadLetterJson(letter) : deadLetterLine(letter, replayed ? 'replayed' : undefined)}\n`),
  });
  const where = result.topicExists ? result.topic : `${result.topic} (the topic does not exist yet: nothing was dead-lettered)`;
  const range = describeTimeRange(query.range);
  const limited = result.inRange > result.listed && query.limit !== undefined ? ` (the ${result.listed} oldest of ${result.inRange}: --limit ${query.limit})` : '';
  const summary = `${result.listed} dead letter(s) of "${query.destination}"${range ? ` ${range}` : ''} in ${where}${limited}\n`;
  // NOTE: with --json, stdout carries only the JSON lines, so that it can be piped to jq.
  (json ? io.stderr : io.stdout).write(summary);
  return 0;
}

/** Moves (or with --dry-run, finds) the letters in the range, printing each, then how many. */
export async function runReplay(deps: RoleDeps, query: LetterQuery, dryRun: boolean, io: CommandIo): Promise<number> {
  const moved = await replayDeadLetters(deps, {
    destinationId: query.destination,
    range: query.range,
    limit: query.limit,
    dryRun,
    shouldStop: io.stdout.closed,
    onLetter: (letter) => io.stdout.write(`${dryRun ? 'would move' : 'moved'}  ${deadLetterLine(letter)}\n`),
  });
  const range = describeTimeRange(query.range);
  const which = `${moved} dead letter(s) of "${query.destination}"${range ? ` ${range}` : ''}`;
  io.stdout.write(dryRun ? `dry run: would replay ${which}; moved none\n` : `replayed ${which} back to delivery\n`);
  return 0;
}

/**
 * `replay --destination ID --message MID`: moves (or with --dry-run, finds) that one letter;
 * says so when an earlier replay moved it already (exit 0), or when there is none (exit 1).
 */
export async function runReplayOne(deps: RoleDeps, query: LetterQuery, messageId: string, dryRun: boolean, io: CommandIo): Promise<number> {
  const operations: LetterOperations = { replay: (options) => replayDeadLetters(deps, options), list: (options) => listDeadLetters(deps, options) };
  const outcome = await replayOneLetter(operations, { destinationId: query.destination, messageId, range: query.range, dryRun });
  const which = `dead letter ${JSON.stringify(messageId)} of "${query.destination}"`;
  if (outcome.kind === 'moved') {
    io.stdout.write(`${dryRun ? 'would move' : 'moved'}  ${deadLetterLine(outcome.letter)}\n`);
    io.stdout.write(dryRun ? `dry run: would replay ${which}; moved none\n` : `replayed ${which} back to delivery\n`);
    return 0;
  }
  if (outcome.kind === 'already_replayed') {
    const { partition, offset } = outcome.letter;
    io.stdout.write(`${which} was already replayed (partition ${partition}, offset ${offset}); nothing moved\n`);
    return 0;
  }
  const range = describeTimeRange(query.range);
  const where = outcome.topicExists ? outcome.topic : `${outcome.topic} (the topic does not exist yet: nothing was dead-lettered)`;
  io.stderr.write(`switchyard replay: no ${which}${range ? ` ${range}` : ''} in ${where}; list the letters with switchyard dlq list --destination ${query.destination}\n`);
  return 1;
}

/**
 * `replay --blocked --source ID`: routes the source's blocked calls in the range again
 * (or with --dry-run, plans them), printing each outcome, then the counts.
 */
export async function runBlockedReplay(deps: RoleDeps, invocation: Extract<Invocation, { kind: 'replay-blocked' }>, io: CommandIo): Promise<number> {
  const { source, range, dryRun } = invocation;
  const result = await replayBlockedCalls(deps, {
    sourceId: source,
    range,
    dryRun,
    onCall: (call) => {
      const what = call.outcome === 'routed' ? `${dryRun ? 'would route' : 'routed'} to ${call.destinations.join(', ') || 'no destination'}` : call.outcome === 'blocked' ? 'still blocked' : 'invalid now (kept in calls.invalid)';
      io.stdout.write(`${formatTimestamp(call.receivedAtMs)}  ${call.messageId ?? '(no messageId)'}  ${what}\n`);
    },
  });
  const span = describeTimeRange(range).replace('dead-lettered', 'received');
  const which = `blocked call(s) of source "${source}"${span ? ` ${span}` : ''}`;
  io.stdout.write(
    dryRun
      ? `dry run: ${result.routed} ${which} would be routed, ${result.blocked} still blocked, ${result.invalid} invalid; nothing written\n`
      : `replayed ${result.routed + result.blocked + result.invalid} ${which}: ${result.routed} routed, ${result.blocked} still blocked, ${result.invalid} invalid\n`,
  );
  return 0;
}

/**
 * Prints the trace of a user's calls (text, or the one JSON document with `--json`); the
 * notes, and what was read, go to stderr.
 */
export async function runTrace(deps: RoleDeps, query: TraceQuery, json: boolean, io: CommandIo): Promise<number> {
  const { document, notes, scanned } = await traceUser(deps, query);
  for (const note of notes) io.stderr.write(`note: ${note}\n`);
  io.stdout.write(json ? `${JSON.stringify(document)}\n` : traceText(document));
  if (document.messages.length === 0) {
    const which = query.messageId === undefined ? 'no call' : `no call with messageId ${JSON.stringify(query.messageId)}`;
    const who = `${query.who.kind === 'userId' ? 'user' : 'anonymous id'} ${JSON.stringify(query.who.id)}`;
    io.stderr.write(`${which} of ${who} was received from ${document.since} until ${document.until}; widen the window with --since, or check the id\n`);
  }
  io.stderr.write(`read ${scanned} record(s) in the partitions that hold this user's records\n`);
  return 0;
}
