// `switchyard replay --destination ID --message MID` and `POST /v1/replay` with a
// `messageId` (docs/cli.md#operator-commands): one dead letter back to delivery, once.
// The replay of replay.ts narrowed to the letters of one messageId and a limit of 1 (its
// ledger keeps a second run from moving the letter again); when it moves none, the
// listing of list-dead-letters.ts says why: the letter was replayed already, or there
// is none of that messageId.
import type { DeadLetter, TimeRange } from './dead-letters.js';
import type { ListOptions, ListResult } from './list-dead-letters.js';
import type { ReplayOptions } from './replay.js';

export interface OneLetterRequest {
  destinationId: string;
  messageId: string;
  range?: TimeRange | undefined;
  dryRun?: boolean | undefined;
}

/**
 * What became of it. `moved`: back to delivery (in a dry run, it would be). `already_replayed`:
 * every letter of that messageId was moved by an earlier replay (the newest of them given).
 * `not_found`: the dead-letter topic holds no letter of that messageId (in the range).
 */
export type OneLetterOutcome =
  | { kind: 'moved'; letter: DeadLetter; dryRun: boolean }
  | { kind: 'already_replayed'; letter: DeadLetter }
  | { kind: 'not_found'; topic: string; topicExists: boolean };

/** The operator commands' code, as the CLI and the admin API bind it. */
export interface LetterOperations {
  replay(options: ReplayOptions): Promise<number>;
  list(options: ListOptions): Promise<ListResult>;
}

export async function replayOneLetter(operations: LetterOperations, request: OneLetterRequest): Promise<OneLetterOutcome> {
  const { destinationId, messageId, range, dryRun = false } = request;
  let moved: DeadLetter | undefined;
  await operations.replay({ destinationId, messageId, range, limit: 1, dryRun, onLetter: (letter) => (moved = letter) });
  if (moved !== undefined) return { kind: 'moved', letter: moved, dryRun };
  let replayed: DeadLetter | undefined;
  const listed = await operations.list({
    destinationId,
    messageId,
    range,
    // Oldest first: the last one told is the newest.
    onLetter: (letter, wasReplayed) => {
      if (wasReplayed) replayed = letter;
    },
  });
  if (replayed !== undefined) return { kind: 'already_replayed', letter: replayed };
  return { kind: 'not_found', topic: listed.topic, topicExists: listed.topicExists };
}
