import { describe, expect, it } from 'vitest';
import { EndOfTurn } from '../../../src/delivery/end-of-turn.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('EndOfTurn', () => {
  it('runs each task once at the end of the turn, however often it was asked for', async () => {
    const endOfTurn = new EndOfTurn();
    const ran: string[] = [];
    const a = () => ran.push('a');
    const b = () => ran.push('b');
    endOfTurn.run(a);
    endOfTurn.run(b);
    endOfTurn.run(a);
    expect(ran).toEqual([]);
    await nextTurn();
    expect(ran).toEqual(['a', 'b']);
    endOfTurn.run(b);
    await nextTurn();
    expect(ran).toEqual(['a', 'b', 'b']);
  });

  it('a task asked for while the others run runs at the end of the next turn', async () => {
    const endOfTurn = new EndOfTurn();
    const ran: string[] = [];
    const later = () => ran.push('later');
    endOfTurn.run(() => {
      ran.push('first');
      endOfTurn.run(later);
    });
    await nextTurn();
    expect(ran).toEqual(['first']);
    await nextTurn();
    expect(ran).toEqual(['first', 'later']);
  });

  it('a task that throws does not cost the others their run', async () => {
    const endOfTurn = new EndOfTurn();
    const ran: string[] = [];
    const thrown: unknown[] = [];
    const onError = (error: unknown) => thrown.push(error);
    process.prependListener('uncaughtException', onError);
    try {
      endOfTurn.run(() => ran.push('before'));
      endOfTurn.run(() => {
        throw new Error('boom');
      });
      endOfTurn.run(() => ran.push('after'));
      await nextTurn();
      await nextTurn();
    } finally {
      process.removeListener('uncaughtException', onError);
    }
    expect(ran).toEqual(['before', 'after']);
    expect(thrown).toEqual([new Error('boom')]);
  });
});
