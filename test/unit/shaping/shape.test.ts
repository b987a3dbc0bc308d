import { describe, expect, it } from 'vitest';
import { compileExpression, EVALUATION_BOUNDS } from '../../../src/shaping/expression.js';
import { compileShaping, MAX_SHAPED_BODY_BYTES, ShapingInput, ShapingSettingsError, shape, shapingProblems } from '../../../src/shaping/shape.js';
import type { Shaped, ShapingSettings } from '../../../src/shaping/shape.js';
import { samplePoint } from '../../../src/shaping/sample.js';

const ORDER = {
  version: 1,
  type: 'track',
  userId: 'u0',
  messageId: 'm-order',
  timestamp: '2026-05-01T12:00:00.000Z',
  event: 'Order Completed',
  properties: { total: 42, currency: 'EUR', email: 'ada@example.com' },
  context: { ip: '203.0.113.9' },
};

async function run(settings: ShapingSettings, body: Record<string, unknown> = ORDER, messageId = 'm-order'): Promise<Shaped> {
  const shaping = compileShaping(settings);
  if (shaping === undefined) throw new Error('no shaping');
  return shape(shaping, new ShapingInput(() => body, messageId));
}

const text = (shaped: Shaped) => (shaped.kind === 'send' ? (shaped.body?.toString('utf8') ?? 'shared body') : shaped);

describe('shape: each option', () => {
  const cases: [string, ShapingSettings, Record<string, unknown>, unknown][] = [
    ['filter true: the shared body', { filter: 'type = "track" and properties.total > 10' }, ORDER, 'shared body'],
    ['filter false', { filter: 'properties.total > 100' }, ORDER, { kind: 'filtered', reason: 'destination_filter' }],
    ['filter matching nothing counts as false', { filter: 'properties.missing' }, ORDER, { kind: 'filtered', reason: 'destination_filter' }],
    ['filter giving "" counts as false', { filter: 'properties.missing ? "x" : ""' }, ORDER, { kind: 'filtered', reason: 'destination_filter' }],
    ['filter giving a non-empty string counts as true', { filter: 'event' }, ORDER, 'shared body'],
    [
      'transform: exactly its JSON',
      { transform: '{"user": userId, "name": event, "total": properties.total}' },
      ORDER,
      '{"user":"u0","name":"Order Completed","total":42}',
    ],
    ['transform to a list', { transform: '[userId, event]' }, ORDER, '["u0","Order Completed"]'],
    [
      'dropProperties alone: the body without them',
      { dropProperties: ['context.ip', 'properties.email'] },
      ORDER,
      '{"version":1,"type":"track","userId":"u0","messageId":"m-order","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR"},"context":{}}',
    ],
    [
      'allowProperties alone',
      { allowProperties: ['properties.total'] },
      ORDER,
      '{"version":1,"type":"track","userId":"u0","messageId":"m-order","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42},"context":{"ip":"203.0.113.9"}}',
    ],
    ['sample 1 keeps', { sample: 1 }, ORDER, 'shared body'],
    ['sample 0 keeps nothing', { sample: 0 }, ORDER, { kind: 'filtered', reason: 'sample' }],
  ];
  it.each(cases)('%s', async (_name, settings, body, expected) => {
    expect(text(await run(settings, body))).toEqual(expected);
  });
});

describe('shape: the order filter, sample, property lists, transform', () => {
  it('the filter sees the whole body, before the property lists remove anything', async () => {
    expect(text(await run({ filter: '$exists(properties.email)', dropProperties: ['properties.email'], transform: '{"email": properties.email, "total": properties.total}' }))).toBe('{"total":42}');
  });

  it('the transform sees the body after the property lists', async () => {
    expect(text(await run({ allowProperties: ['properties.total'], transform: '$' }))).toBe(
      '{"version":1,"type":"track","userId":"u0","messageId":"m-order","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42},"context":{"ip":"203.0.113.9"}}',
    );
  });

  it('a filtered event is filtered, whatever its sample (the filter comes first)', async () => {
    expect(await run({ filter: 'false', sample: 0 })).toEqual({ kind: 'filtered', reason: 'destination_filter' });
  });

  it('a sampled-out event is never transformed (a failing transform does not show)', async () => {
    expect(await run({ sample: 0, transform: 'properties.total * "x"' })).toEqual({ kind: 'filtered', reason: 'sample' });
  });

  it('sample decides by messageId: kept ids are kept, others not, whatever the body', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    for (const id of ids) {
      const shaped = await run({ sample: 0.3 }, { ...ORDER, event: `e-${id}` }, id);
      expect(shaped.kind === 'send').toBe(samplePoint(id) < 0.3);
    }
  });
});

describe('shape: failures stay values', () => {
  const cases: [string, ShapingSettings, RegExp][] = [
    ['a filter that throws', { filter: 'properties.email * 2' }, /^filter: The left side of the "\*" operator must evaluate to a number \(JSONata T2001, at character \d+\)$/],
    ['a transform that throws', { transform: '{"x": properties.currency * 2}' }, /^transform: The left side of the "\*" operator must evaluate to a number/],
    ['a transform giving a string', { transform: 'event' }, /^transform: the transform gave a string, not a JSON object or list; make its result an object such as \{"user": userId\}$/],
    ['a transform giving a number', { transform: 'properties.total' }, /^transform: the transform gave a number, not a JSON object or list/],
    ['a transform matching nothing', { transform: 'properties.missing' }, /^transform: the transform gave nothing \(no part of the expression matched this call\), not a JSON object or list/],
    ['a transform giving a function', { transform: 'function($x) { $x }' }, /^transform: the transform gave a function, not a JSON object or list/],
    ['a transform giving null', { transform: 'null' }, /^transform: the transform gave null, not a JSON object or list/],
    ['a result over the size limit', { transform: `{"pad": $pad("", ${MAX_SHAPED_BODY_BYTES})}` }, /^transform: the result is \d+ bytes, over the 262144-byte limit of a shaped body$/],
  ];
  it.each(cases)('%s', async (_name, settings, expected) => {
    const shaped = await run(settings);
    expect(shaped.kind).toBe('failed');
    if (shaped.kind !== 'failed') return;
    expect(`${shaped.stage}: ${shaped.error}`).toMatch(expected);
  });

  it('a runtime error quotes none of the call\'s string values (they may be user ids or emails)', async () => {
    const shaped = await run({ filter: 'properties.email > 5' });
    expect(shaped.kind).toBe('failed');
    if (shaped.kind !== 'failed') return;
    expect(shaped.error).not.toContain('ada@example.com');
    expect(shaped.error).toContain('(a value of the call)');
    expect(shaped.error).toMatch(/JSONata T2009/);
  });

  it('JSONata functions inside a result are left out, like JavaScript functions in JSON', async () => {
    expect(text(await run({ transform: '{"user": userId, "f": function($x) { $x }, "g": $uppercase}' }))).toBe('{"user":"u0"}');
  });
});

describe('shape: the bound of an evaluation (docs/webhooks.md#time-and-size-bounds)', () => {
  it('stops an endless recursion, as a failure of that destination', async () => {
    const shaped = await run({ filter: '($loop := function($n) { $n < 0 ? $n : $loop($n + 1) }; $loop(0))' });
    expect(shaped.kind).toBe('failed');
    if (shaped.kind !== 'failed') return;
    expect(shaped.error).toMatch(/evaluation steps, the bound of one evaluation|the time budget of one evaluation|JSONata D1011/);
  });

  it('stops a long loop at the step bound or the time budget, whichever the host reaches first', async () => {
    const shaped = await run({ transform: '{"n": $count($map([1..60000], function($x) { $x * 2 }))}' });
    expect(shaped).toEqual({
      kind: 'failed',
      stage: 'transform',
      error: expect.stringMatching(
        /^stopped after (25000 evaluation steps, the bound of one evaluation \(an endless or very long loop\?\)|30 ms, the time budget of one evaluation \(too much work for one call: a long loop, a large sort\?\)) \(at character \d+\)$/,
      ),
    });
    // A shorter loop of the same shape is within both, even on a busy host.
    expect(text(await run({ transform: '{"n": $count($map([1..100], function($x) { $x * 2 }))}' }))).toBe('{"n":100}');
  });

  it('gives the event loop a turn while a long evaluation runs, and cuts it at the time budget or the step bound', async () => {
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 1);
    try {
      // Each step writes out a 30 KB call: far fewer steps than the bound, far more time than the budget.
      const shaped = await run({ transform: '{"n": $count($map([1..20000], function($x) { $length($string($$)) }))}' }, { type: 'track', properties: { blob: 'x'.repeat(30_000) } });
      // Without the pauses every step is a microtask: no timer could fire until the end.
      expect(ticks).toBeGreaterThan(0);
      expect(shaped).toEqual({ kind: 'failed', stage: 'transform', error: expect.stringMatching(/^stopped after 30 ms, the time budget of one evaluation/) });
    } finally {
      clearInterval(ticker);
    }
  });

  it('runs regexes in linear time: the review\'s backtracking pattern, on 26 characters and on 30 KB', async () => {
    // A backtracking engine took 11.9 s on the 26 characters, doubling with each one more.
    expect(text(await run({ transform: `{"m": $count($match("${'a'.repeat(26)}b", /(a+)+$/)), "r": $replace("${'a'.repeat(39)}b!", /(a|aa)+b/, "x")}` }))).toBe('{"m":0,"r":"x!"}');
    const started = performance.now();
    const shaped = await run({ transform: '{"m": $count($match(properties.blob, /(a+)+$/))}' }, { type: 'track', properties: { blob: `${'a'.repeat(30 * 1024)}b` } });
    // Linear, about 25 ms warm on a busy host: answered, or cut at the budget when the host is slower still.
    expect(performance.now() - started).toBeLessThan(2_000);
    if (shaped.kind === 'send') expect(text(shaped)).toBe('{"m":0}');
    else expect(shaped).toEqual({ kind: 'failed', stage: 'transform', error: expect.stringMatching(/^stopped after 30 ms, the time budget of one evaluation/) });
  });

  it('refuses at load a regex that needs backtracking (a backreference, a lookahead)', () => {
    expect(shapingProblems({ transform: '{"m": $match(userId, /(a)\\1/)}' })).toEqual([
      {
        path: ['transform'],
        message: expect.stringMatching(/^is not a JSONata expression that compiles: the regex \/\(a\)\\1\/ \(at character \d+\) needs a backtracking engine \(.*\): write it without backreferences or lookarounds; fix the expression/),
      },
    ]);
    expect(shapingProblems({ filter: '$contains(event, /Order(?= Completed)/)' })).toHaveLength(1);
    expect(shapingProblems({ filter: '$contains(event, /^Order [A-Z]\\w+$/i)' })).toEqual([]);
  });

  it('sorts 4,000 strings in n·log n, in JSONata\'s order, and refuses $eval', async () => {
    const words = Array.from({ length: 4_000 }, (_, i) => `w${((i * 7_919) % 46_656).toString(36).padStart(3, '0')}`);
    const started = performance.now();
    const shaped = await run({ transform: '{"s": $sort(properties.words)}' }, { type: 'track', properties: { words } });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(shaped.kind === 'send' && JSON.parse(shaped.body!.toString('utf8'))).toEqual({ s: [...words].sort() });
    const evaluated = await run({ transform: '$eval("{\\"a\\": 1}")' });
    expect(evaluated).toMatchObject({ kind: 'failed', error: expect.stringContaining('$eval is not available in shaping expressions') });
  });

  it('stops a sequence past its length bound', async () => {
    const shaped = await run({ transform: `{"n": $count([1..${EVALUATION_BOUNDS.maxSequence * 2}])}` });
    expect(shaped.kind).toBe('failed');
  });
});

describe('shape: synchronous where the fast path answers', () => {
  it('returns a value, not a promise, for the everyday filter and transform', () => {
    const shaping = compileShaping({ filter: 'type = "track" and properties.total > 10', transform: '{"user": userId, "name": event}' })!;
    const shaped = shape(shaping, new ShapingInput(() => ORDER, 'm-order'));
    expect(shaped).not.toBeInstanceOf(Promise);
    expect(text(shaped as Shaped)).toBe('{"user":"u0","name":"Order Completed"}');
  });

  it('returns a promise when JSONata must evaluate, with the same kind of answer', async () => {
    const shaping = compileShaping({ transform: '{"n": $count(properties.*)}' })!;
    const shaped = shape(shaping, new ShapingInput(() => ORDER, 'm-order'));
    expect(shaped).toBeInstanceOf(Promise);
    expect(text(await shaped)).toBe('{"n":3}');
  });

  it('makes the body object once for all destinations of a call', async () => {
    let made = 0;
    const input = new ShapingInput(() => {
      made += 1;
      return ORDER;
    }, 'm-order');
    for (const settings of [{ filter: 'true' }, { transform: '$' }, { dropProperties: ['context'] }, { sample: 0.5 }]) await shape(compileShaping(settings)!, input);
    expect(made).toBe(1);
  });
});

describe('compileShaping', () => {
  it('is undefined without any key, and says whether the bytes change', () => {
    expect(compileShaping({})).toBeUndefined();
    expect(compileShaping({ filter: 'true', sample: 0.5 })?.reshapes).toBe(false);
    expect(compileShaping({ dropProperties: ['context.ip'] })?.reshapes).toBe(true);
    expect(compileShaping({ transform: '$' })?.reshapes).toBe(true);
  });

  it('refuses what the loader refuses (a config built by hand)', () => {
    expect(() => compileShaping({ transform: '{"a": }' })).toThrow(ShapingSettingsError);
    expect(shapingProblems({ filter: 'type = ', dropProperties: ['context.ip'], allowProperties: ['traits.plan', 'ip'] })).toEqual([
      { path: ['filter'], message: expect.stringMatching(/^is not a JSONata expression that compiles: Unexpected end of expression \(JSONata S0207, at character 7\)/) },
      { path: ['allowProperties'], message: expect.stringMatching(/not both/) },
      { path: ['allowProperties', 1], message: expect.stringMatching(/"ip" is not under properties or traits/) },
    ]);
  });

  it('compiles an expression once: its syntax error carries JSONata\'s message and position', () => {
    expect(compileExpression('{"user": userId, "name": }')).toEqual({
      ok: false,
      error: 'The symbol "}" cannot be used as a unary operator (JSONata S0211, at character 26)',
    });
  });
});
