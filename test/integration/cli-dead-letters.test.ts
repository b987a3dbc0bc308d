// `switchyard dlq list` and `switchyard replay --since/--until/--dry-run`, run as the
// operator runs them (a child process) against dead letters written straight to a DLQ
// topic of the real broker, each with its own time of dead-lettering.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin, createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { runCli as run, writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const HOUR = 3_600_000;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
beforeAll(async () => {
  kafka = await createTestKafka();
});
afterAll(async () => {
  await kafka?.close();
});

const body = (id: string) => `{"version":1,"type":"track","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Trial Started","properties":{}}`;

interface Letter {
  id: string;
  /** Hours before now it was dead-lettered; undefined: no last-attempt-at header (the record time counts). */
  hoursAgo: number | undefined;
  attempts: number;
}

/** A destination `hooks` with its DLQ (2 partitions) holding `letters`; returns the config file and names. */
async function setUp(letters: Letter[]) {
  const prefix = randomPrefix();
  const clientId = randomName('cli-dlq');
  const file = writeConfigFile({
    kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 2 },
    sources: [{ id: 'web', writeKey: randomName('key'), destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
  });
  const dlq = `${prefix}deliveries.hooks.dlq`;
  await kafka.createTopic(dlq, 2);
  const now = Date.now();
  const deadLetteredAt = new Map<string, string>();
  await kafka.produce(
    dlq,
    letters.map((letter, i) => {
      const at = letter.hoursAgo === undefined ? undefined : new Date(now - letter.hoursAgo * HOUR).toISOString();
      if (at) deadLetteredAt.set(letter.id, at);
      return {
        key: `u-${letter.id}`,
        value: body(letter.id),
        // Spread over both partitions, in order within each.
        partition: i % 2,
        headers: {
          'source-id': 'web',
          'message-id': letter.id,
          attempt: String(letter.attempts),
          'first-attempt-at': new Date(now - 5 * HOUR).toISOString(),
          ...(at ? { 'last-attempt-at': at } : {}),
          error: `https://hooks.example.com/in: 410 Gone (${letter.id})`,
        },
      };
    }),
  );
  return { file, clientId, prefix, dlq, deadLetteredAt };
}

interface JsonLetter {
  messageId: string;
  deadLetteredAt: string;
  attempts: number;
  error: string;
  offset: number;
  partition: number;
}

function jsonLines(text: string): JsonLetter[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JsonLetter);
}

// Written in this order, spread over the two partitions (i % 2): partition 0 holds d-2,
// d-6, d-4, d-7 and partition 1 d-1, d-3, d-5, so neither a partition's own order nor
// one partition after the other is the order of time (d-1 … d-7).
const LETTERS: Letter[] = [
  { id: 'd-2', hoursAgo: 5, attempts: 3 },
  { id: 'd-1', hoursAgo: 30, attempts: 9 },
  { id: 'd-6', hoursAgo: 1, attempts: 4 },
  { id: 'd-3', hoursAgo: 3.5, attempts: 1 },
  { id: 'd-4', hoursAgo: 3, attempts: 12 },
  { id: 'd-5', hoursAgo: 2.5, attempts: 2 },
  { id: 'd-7', hoursAgo: undefined, attempts: 5 }, // no last-attempt-at: dead-lettered now, by its record time
];
const BY_TIME = ['d-1', 'd-2', 'd-3', 'd-4', 'd-5', 'd-6', 'd-7'];

describe('switchyard dlq list', () => {
  // NOTE: each step is a CLI process, a second or more each on a loaded machine.
  it('prints exactly the letters in the DLQ, oldest first, by time range and limit, as JSON or lines, without consuming them', { timeout: 180_000 }, async () => {
    const { file, prefix, dlq, deadLetteredAt } = await setUp(LETTERS);

    const all = await run(['dlq', 'list', '--destination', 'hooks', '--json', '--config', file]);
    expect(all.err).toContain(`7 dead letter(s) of "hooks" in ${dlq}`);
    expect(all.code).toBe(0);
    const listed = jsonLines(all.out);
    expect(listed.map((l) => l.messageId)).toEqual(BY_TIME);
    for (const letter of listed) {
      expect(Object.keys(letter)).toEqual(['messageId', 'deadLetteredAt', 'attempts', 'error', 'offset', 'partition']);
      const source = LETTERS.find((l) => l.id === letter.messageId)!;
      const index = LETTERS.indexOf(source);
      expect(letter).toMatchObject({
        attempts: source.attempts,
        error: `https://hooks.example.com/in: 410 Gone (${source.id})`,
        partition: index % 2,
        offset: Math.floor(index / 2),
      });
      if (source.hoursAgo !== undefined) expect(letter.deadLetteredAt).toBe(deadLetteredAt.get(source.id));
      else expect(Date.now() - Date.parse(letter.deadLetteredAt)).toBeLessThan(5 * 60_000);
    }

    // A range: durations back from now, and an ISO time.
    const ranged = await run(['dlq', 'list', '--destination', 'hooks', '--since', '4h', '--until', '2h', '--json', '--config', file]);
    expect(ranged.code).toBe(0);
    expect(jsonLines(ranged.out).map((l) => l.messageId)).toEqual(['d-3', 'd-4', 'd-5']);
    const until = await run(['dlq', 'list', '--destination', 'hooks', '--until', new Date(Date.now() - 24 * HOUR).toISOString(), '--json', '--config', file]);
    expect(jsonLines(until.out).map((l) => l.messageId)).toEqual(['d-1']);

    // Lines for a person, and --limit.
    const lines = await run(['dlq', 'list', '--destination', 'hooks', '--since', '2h', '--config', file]);
    expect(lines.code).toBe(0);
    const printed = lines.out.trimEnd().split('\n');
    expect(printed).toHaveLength(3);
    expect(printed.slice(0, 2)).toEqual([
      expect.stringMatching(/^\S+Z {2}d-6 {2}attempts=4 {2}partition=0 {2}offset=1 {2}error=https:\/\/hooks\.example\.com\/in: 410 Gone \(d-6\)$/),
      expect.stringMatching(/^\S+Z {2}d-7 {2}attempts=5 {2}partition=0 {2}offset=3 {2}error=https:\/\/hooks\.example\.com\/in: 410 Gone \(d-7\)$/),
    ]);
    expect(printed[2]).toMatch(/^2 dead letter\(s\) of "hooks" dead-lettered since \S+ in /);
    // --limit: the oldest of the range, wherever they are.
    const limited = await run(['dlq', 'list', '--destination', 'hooks', '--limit', '2', '--json', '--config', file]);
    expect(jsonLines(limited.out).map((l) => l.messageId)).toEqual(['d-1', 'd-2']);
    expect(limited.err).toContain('(the 2 oldest of 7: --limit 2)');

    // Nothing was consumed: no group kept a position, and the replay still finds all seven.
    const groups = (await kafka.admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    expect(groups).toEqual([]);
    const dry = await run(['replay', '--destination', 'hooks', '--dry-run', '--config', file]);
    expect(dry.out).toContain('dry run: would replay 7 dead letter(s) of "hooks"; moved none');
  });

  it('says so when nothing was ever dead-lettered', async () => {
    const prefix = randomPrefix();
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('cli-dlq'), topicPrefix: prefix },
      sources: [{ id: 'web', writeKey: randomName('key'), destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
    });
    const result = await run(['dlq', 'list', '--destination', 'hooks', '--config', file]);
    expect(result.code).toBe(0);
    expect(result.out).toBe(`0 dead letter(s) of "hooks" in ${prefix}deliveries.hooks.dlq (the topic does not exist yet: nothing was dead-lettered)\n`);
    expect((await kafka.admin.listTopics()).filter((t) => t.startsWith(prefix))).toEqual([]);
  });
});

describe('switchyard replay by time range', () => {
  it('moves exactly the letters in the range, none on --dry-run, and a later replay moves the rest once', { timeout: 180_000 }, async () => {
    const { file, prefix } = await setUp(LETTERS);
    const target = `${prefix}deliveries.hooks`;
    const movedIds = async (atLeast: number) => (await kafka.readAll(target, { atLeast })).map((m) => m.headers['message-id']).sort();

    const dry = await run(['replay', '--destination', 'hooks', '--since', '4h', '--until', '2h', '--dry-run', '--config', file]);
    expect(dry.code).toBe(0);
    expect(dry.out).toMatch(/dry run: would replay 3 dead letter\(s\) of "hooks" dead-lettered from \S+ until \S+; moved none\n$/);
    expect(dry.out.split('\n').filter((l) => l.startsWith('would move  ')).map((l) => l.split('  ')[2]).sort()).toEqual(['d-3', 'd-4', 'd-5']);
    expect(await movedIds(0)).toEqual([]);

    const ranged = await run(['replay', '--destination', 'hooks', '--since', '4h', '--until', '2h', '--config', file]);
    expect(ranged.code).toBe(0);
    expect(ranged.out).toMatch(/replayed 3 dead letter\(s\) of "hooks" dead-lettered from \S+ until \S+ back to delivery\n$/);
    expect(ranged.out.split('\n').filter((l) => l.startsWith('moved  ')).map((l) => l.split('  ')[2]).sort()).toEqual(['d-3', 'd-4', 'd-5']);
    expect(await movedIds(3)).toEqual(['d-3', 'd-4', 'd-5']);
    // Replayed with the same bytes and a fresh retry window.
    const replayed = await kafka.readAll(target, { atLeast: 3 });
    for (const m of replayed) {
      expect(m.text).toBe(body(m.headers['message-id']!));
      expect(m.headers).toMatchObject({ attempt: '0', 'first-attempt-at': '' });
      expect(m.headers.error).toBeUndefined();
      expect(m.headers['last-attempt-at']).toBeUndefined();
    }

    // The same range again: nothing left in it.
    const again = await run(['replay', '--destination', 'hooks', '--since', '4h', '--until', '2h', '--config', file]);
    expect(again.out).toContain('replayed 0 dead letter(s)');

    // dlq list marks what a replay moved.
    const listed = await run(['dlq', 'list', '--destination', 'hooks', '--config', file]);
    const marked = listed.out.split('\n').filter((l) => l.includes('  replayed  ')).map((l) => l.split('  ')[1]).sort();
    expect(marked).toEqual(['d-3', 'd-4', 'd-5']);

    // Without a range: the letters before and after the range, not the three again.
    const rest = await run(['replay', '--destination', 'hooks', '--limit', '2', '--config', file]);
    expect(rest.out).toContain('replayed 2 dead letter(s) of "hooks" back to delivery');
    const last = await run(['replay', '--destination', 'hooks', '--config', file]);
    expect(last.out).toContain('replayed 2 dead letter(s) of "hooks" back to delivery');
    expect(await movedIds(7)).toEqual(LETTERS.map((l) => l.id).sort());
    const none = await run(['replay', '--destination', 'hooks', '--config', file]);
    expect(none.out).toContain('replayed 0 dead letter(s) of "hooks" back to delivery');
    expect(await kafka.readAll(target, { atLeast: 7, settleMs: 300 })).toHaveLength(7);
  });
});

describe('switchyard replay after an upgrade from the <clientId>-replay-<id> group name', () => {
  it('lists and skips the letters the old group recorded as moved, moves the others once, and records them in the new group', async () => {
    const { file, clientId, prefix, dlq } = await setUp(LETTERS);
    // What a replay of the version before recorded: partition 0 (d-1, d-3, d-5, d-7 at
    // offsets 0-3) moved d-1 and d-5; partition 1 (d-2, d-4, d-6) moved d-2 and d-4.
    const admin = createAdmin(createKafka({ brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 2, replicationFactor: 1 }, silentLogger()));
    await admin.connect();
    try {
      await admin.commitOffsets(`${clientId}-replay-hooks`, [
        {
          topic: dlq,
          partitions: [
            { partition: 0, offset: '1', metadata: 'replayed:2' },
            { partition: 1, offset: '2', metadata: 'replayed:' },
          ],
        },
      ]);
    } finally {
      await admin.disconnect();
    }
    const target = `${prefix}deliveries.hooks`;

    const listed = await run(['dlq', 'list', '--destination', 'hooks', '--config', file]);
    expect(listed.code).toBe(0);
    const marked = listed.out.split('\n').filter((l) => l.includes('  replayed  ')).map((l) => l.split('  ')[1]).sort();
    // Partition 0 holds d-2, d-6, d-4, d-7 and partition 1 d-1, d-3, d-5 (LETTERS): the old
    // group moved partition 0's offsets 0 and 2 and partition 1's below 2.
    expect(marked).toEqual(['d-1', 'd-2', 'd-3', 'd-4']);

    const replay = await run(['replay', '--destination', 'hooks', '--config', file]);
    expect(replay.code).toBe(0);
    expect(replay.out).toContain('replayed 3 dead letter(s) of "hooks" back to delivery');
    expect((await kafka.readAll(target, { atLeast: 3 })).map((m) => m.headers['message-id']).sort()).toEqual(['d-5', 'd-6', 'd-7']);
    const [committed] = await kafka.admin.fetchOffsets({ groupId: `${prefix}replay.hooks`, topics: [dlq] });
    expect(committed?.partitions.map((p) => [p.partition, p.offset]).sort()).toEqual([
      [0, '4'],
      [1, '3'],
    ]);

    const again = await run(['replay', '--destination', 'hooks', '--config', file]);
    expect(again.out).toContain('replayed 0 dead letter(s) of "hooks" back to delivery');
    expect(await kafka.readAll(target, { atLeast: 3, settleMs: 300 })).toHaveLength(3);
  });
});

describe('a replay that cannot record what it moved', () => {
  it('moves nothing and exits 2 saying what to run, when earlier ranged replays left too many stretches', async () => {
    const { file, prefix, dlq } = await setUp(LETTERS);
    // Earlier ranged replays (simulated): every other offset far above the letters, in
    // partition 0 — as many separate stretches as a commit's metadata can hold (3,900 of
    // the broker's 4,096 characters), so that no further one can be recorded.
    const stretches = Array.from({ length: 555 }, (_, i) => String(100_000 + 2 * i)).join(',');
    expect(stretches.length).toBeGreaterThan(3_800);
    const admin = createAdmin(createKafka({ brokers: testBrokers(), clientId: randomName('ledger'), topicPrefix: prefix, partitions: 2, replicationFactor: 1 }, silentLogger()));
    await admin.connect();
    try {
      await admin.commitOffsets(`${prefix}replay.hooks`, [{ topic: dlq, partitions: [{ partition: 0, offset: '0', metadata: `replayed:${stretches}` }] }]);
    } finally {
      await admin.disconnect();
    }

    const result = await run(['replay', '--destination', 'hooks', '--since', '4h', '--until', '2h', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.err).toContain(`partition 0 of ${dlq}: earlier replays by time range left too many separate stretches`);
    expect(result.err).toContain('run `switchyard replay --destination hooks` without --since/--until first');
    // Letters of partition 1 (d-3, d-5) may have moved before partition 0 was reached; none of partition 0 (d-4) did.
    const moved = await kafka.readAll(`${prefix}deliveries.hooks`, { settleMs: 300 });
    expect(moved.map((m) => m.headers['message-id']).filter((id) => id === 'd-4')).toEqual([]);
  });
});

describe('usage errors of dlq list and replay', () => {
  it('exit 1 naming an unknown destination or a bad time, and touch nothing', async () => {
    const { file, prefix } = await setUp([{ id: 'x-1', hoursAgo: 1, attempts: 1 }]);
    for (const command of [['replay'], ['dlq', 'list']]) {
      const unknown = await run([...command, '--destination', 'hooks-nope', '--config', file]);
      expect(unknown.code).toBe(1);
      expect(unknown.err).toContain(`${file}: destinations: no destination has id "hooks-nope" (the config has: hooks)`);
      expect(unknown.err).not.toMatch(/\n\s+at /);

      const badTime = await run([...command, '--destination', 'hooks', '--since', 'last tuesday', '--config', file]);
      expect(badTime.code).toBe(1);
      expect(badTime.err).toContain('--since "last tuesday" is not a time: give an ISO 8601 time');
    }
    expect((await kafka.admin.listTopics()).filter((t) => t.startsWith(prefix))).toEqual([`${prefix}deliveries.hooks.dlq`]);
  });
});
