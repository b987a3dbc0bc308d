import { describe, expect, it } from 'vitest';
import { UserOrder } from '../../../src/delivery/user-order.js';

interface Ev {
  user: string;
  name: string;
  partition: number;
}
/** `a1`: user a's first event (partition 0 unless given). */
const ev = (name: string, partition = 0): Ev => ({ user: name[0]!, name, partition });

/** Offers each event as the lane does: started when it may, parked when not. Returns the names started. */
function offer(order: UserOrder<Ev>, events: Ev[]): string[] {
  const started: string[] = [];
  for (const e of events) {
    if (order.mayStart(e.user)) {
      order.started(e);
      started.push(e.name);
    } else {
      order.park(e);
    }
  }
  return started;
}

describe('UserOrder', () => {
  it('runs one event of a user at a time, the other users at once', () => {
    const order = new UserOrder<Ev>();
    expect(offer(order, [ev('a1'), ev('b1'), ev('a2'), ev('c1'), ev('a3'), ev('b2')])).toEqual(['a1', 'b1', 'c1']);
    expect(order.parked).toBe(3);
  });

  it('starts the next parked event of a user, oldest first, when the one under way is done', () => {
    const order = new UserOrder<Ev>();
    offer(order, [ev('a1'), ev('a2'), ev('a3'), ev('b1')]);
    const done: string[] = [];
    for (let next = order.done('a'); next !== undefined; next = order.done('a')) done.push(next.name);
    expect(done).toEqual(['a2', 'a3']);
    expect(order.parked).toBe(0);
    expect(order.holds('a')).toBe(false);
    expect(order.holds('b')).toBe(true);
    expect(order.mayStart('a')).toBe(true);
  });

  it('a user whose event waits for its retry holds only that user back', () => {
    const order = new UserOrder<Ev>();
    offer(order, [ev('a1'), ev('b1')]);
    // a1 failed and waits in the lane: not done. b's events go on, a's wait.
    expect(order.done('b')).toBeUndefined();
    expect(offer(order, [ev('b2'), ev('a2'), ev('b3')])).toEqual(['b2']);
    expect(order.done('b')).toMatchObject({ name: 'b3' });
    expect(order.parked).toBe(1);
    expect(order.done('a')).toMatchObject({ name: 'a2' });
  });

  it('forgets the users whose event under way was in a revoked partition, returning what they had parked', () => {
    const order = new UserOrder<Ev>();
    offer(order, [ev('a1', 0), ev('b1', 1), ev('a2', 0), ev('b2', 1)]);
    const dropped = order.forget((current) => current.partition === 0);
    expect(dropped.map((e) => e.name)).toEqual(['a2']);
    expect(order.parked).toBe(1);
    expect(order.holds('a')).toBe(false);
    expect(order.done('a')).toBeUndefined(); // a's old event ending later changes nothing
    expect(order.done('b')).toMatchObject({ name: 'b2' });
  });

  it("drops a revoked partition's parked events from behind users whose event under way stays", () => {
    const order = new UserOrder<Ev>();
    offer(order, [ev('b1', 1), ev('b2', 0), ev('b3', 1)]);
    expect(order.forget((e) => e.partition === 0).map((e) => e.name)).toEqual(['b2']);
    expect(order.parked).toBe(1);
    expect(order.done('b')).toMatchObject({ name: 'b3' });
  });

  it('refuses to park an event of a user with nothing under way (the lane would lose it)', () => {
    const order = new UserOrder<Ev>();
    expect(() => order.park(ev('a1'))).toThrow(/nothing of user "a" is under way/);
  });
});
