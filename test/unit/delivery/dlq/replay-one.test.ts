import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../../../src/delivery/dlq/dead-letters.js';
import type { ListOptions } from '../../../../src/delivery/dlq/list-dead-letters.js';
import type { ReplayOptions } from '../../../../src/delivery/dlq/replay.js';
import { replayOneLetter } from '../../../../src/delivery/dlq/replay-one.js';

const letter = (offset: number, messageId = 'm-2'): DeadLetter => ({ messageId, deadLetteredAtMs: 1_000 + offset, attempts: 3, error: 'e', partition: 0, offset: BigInt(offset) });

/** The operations over a DLQ held in memory: `replayed` offsets as a replay's ledger would hold them. */
function operations(letters: DeadLetter[], replayed: Set<number>) {
  const calls: { replay: ReplayOptions[]; list: ListOptions[] } = { replay: [], list: [] };
  return {
    calls,
    async replay(options: ReplayOptions) {
      calls.replay.push(options);
      let moved = 0;
      for (const l of letters) {
        if (moved >= (options.limit ?? Infinity) || replayed.has(Number(l.offset)) || l.messageId !== options.messageId) continue;
        if (options.dryRun !== true) replayed.add(Number(l.offset));
        options.onLetter?.(l);
        moved += 1;
      }
      return moved;
    },
    async list(options: ListOptions) {
      calls.list.push(options);
      const mine = letters.filter((l) => l.messageId === options.messageId);
      for (const l of mine) options.onLetter(l, replayed.has(Number(l.offset)));
      return { topic: 'sy.deliveries.hooks.dlq', listed: mine.length, inRange: mine.length, remaining: mine.length, topicExists: true };
    },
  };
}

describe('replayOneLetter', () => {
  it('moves the one letter of the messageId, with a limit of 1; a second run finds it replayed and moves nothing', async () => {
    const replayed = new Set<number>();
    const ops = operations([letter(0, 'm-1'), letter(1), letter(2, 'm-3')], replayed);
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-2' })).toEqual({ kind: 'moved', letter: letter(1), dryRun: false });
    expect(ops.calls.replay[0]).toMatchObject({ destinationId: 'hooks', messageId: 'm-2', limit: 1, dryRun: false });
    expect([...replayed]).toEqual([1]);
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-2' })).toEqual({ kind: 'already_replayed', letter: letter(1) });
    expect([...replayed]).toEqual([1]);
  });

  it('in a dry run finds it and moves nothing', async () => {
    const replayed = new Set<number>();
    const ops = operations([letter(1)], replayed);
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-2', dryRun: true })).toEqual({ kind: 'moved', letter: letter(1), dryRun: true });
    expect(replayed.size).toBe(0);
  });

  it('a messageId dead-lettered again after its replay: the new letter moves, once', async () => {
    const replayed = new Set([1]);
    const ops = operations([letter(1), letter(5)], replayed);
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-2' })).toEqual({ kind: 'moved', letter: letter(5), dryRun: false });
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-2' })).toEqual({ kind: 'already_replayed', letter: letter(5) });
  });

  it('says when there is no letter of that messageId', async () => {
    const ops = operations([letter(0, 'm-1')], new Set());
    expect(await replayOneLetter(ops, { destinationId: 'hooks', messageId: 'm-9' })).toEqual({ kind: 'not_found', topic: 'sy.deliveries.hooks.dlq', topicExists: true });
  });
});
