import { describe, expect, it } from 'vitest';
import { COMMANDS, parseCommandLine } from '../../../src/cli/args.js';

const NOW = Date.UTC(2026, 4, 1, 12);

function usageError(argv: string[]): string {
  const result = parseCommandLine(argv, NOW);
  if (result.kind !== 'usage-error') throw new Error(`expected a usage error for ${argv.join(' ')}, got ${JSON.stringify(result)}`);
  return result.message;
}

describe('parseCommandLine', () => {
  it.each([
    [['gateway'], { kind: 'role', role: 'gateway', config: undefined }],
    [['all', '--config', 'x.yaml'], { kind: 'role', role: 'all', config: 'x.yaml' }],
    [['--config', 'x.yaml', 'router'], { kind: 'role', role: 'router', config: 'x.yaml' }],
    [['check-config', '--config=x.yaml'], { kind: 'check-config', config: 'x.yaml' }],
    [['--version'], { kind: 'version' }],
    [['gateway', '--version'], { kind: 'version' }],
    [
      ['replay', '--destination', 'hooks', '--since', '2h', '--until', '2026-05-01T11:30:00Z', '--limit', '5', '--dry-run'],
      { kind: 'replay', config: undefined, dryRun: true, query: { destination: 'hooks', limit: 5, range: { sinceMs: NOW - 7_200_000, untilMs: Date.UTC(2026, 4, 1, 11, 30) } } },
    ],
    [['replay', '--destination', 'hooks'], { kind: 'replay', config: undefined, dryRun: false, query: { destination: 'hooks', limit: undefined, range: {} } }],
    [['replay', '--destination', 'hooks', '--message', 'm-2'], { kind: 'replay', config: undefined, dryRun: false, messageId: 'm-2', query: { destination: 'hooks', limit: undefined, range: {} } }],
    [['replay', '--destination', 'hooks', '--message=m-2', '--dry-run'], { kind: 'replay', config: undefined, dryRun: true, messageId: 'm-2', query: { destination: 'hooks', limit: undefined, range: {} } }],
    [
      ['replay', '--blocked', '--source', 'web', '--since', '2h', '--dry-run'],
      { kind: 'replay-blocked', config: undefined, source: 'web', dryRun: true, range: { sinceMs: NOW - 7_200_000 } },
    ],
    [['replay', '--blocked', '--source', 'web'], { kind: 'replay-blocked', config: undefined, source: 'web', dryRun: false, range: {} }],
    [
      ['dlq', 'list', '--destination', 'hooks', '--json', '--config', 'c.yaml', '--since', '30m'],
      { kind: 'dlq-list', config: 'c.yaml', json: true, query: { destination: 'hooks', limit: undefined, range: { sinceMs: NOW - 1_800_000 } } },
    ],
    [
      ['trace', '--user', 'u-1'],
      { kind: 'trace', config: undefined, json: false, query: { who: { kind: 'userId', id: 'u-1' }, messageId: undefined, sinceMs: NOW - 86_400_000, untilMs: undefined } },
    ],
    [
      ['trace', '--anonymous-id', 'a-7', '--message', 'm-1', '--since', '2h', '--until', '2026-05-01T11:30:00Z', '--json', '--config', 'c.yaml'],
      { kind: 'trace', config: 'c.yaml', json: true, query: { who: { kind: 'anonymousId', id: 'a-7' }, messageId: 'm-1', sinceMs: NOW - 7_200_000, untilMs: Date.UTC(2026, 4, 1, 11, 30) } },
    ],
  ])('%j', (argv, expected) => {
    expect(parseCommandLine(argv, NOW)).toEqual(expected);
  });

  it('gives the program help, and each command its own with a one-line summary and an example', () => {
    const program = parseCommandLine(['--help'], NOW);
    expect(program.kind).toBe('help');
    for (const command of COMMANDS) {
      expect(program.kind === 'help' && program.text).toContain(`  ${command.name}`);
      const argv = [...command.name.split(' '), '--help'];
      const help = parseCommandLine(argv, NOW);
      expect(help.kind, argv.join(' ')).toBe('help');
      if (help.kind !== 'help') continue;
      expect(help.text.split('\n')[0]).toBe(`switchyard ${command.name}: ${command.summary}`);
      // A command that takes a destination id gives it before the options.
      expect(help.text).toMatch(new RegExp(`example:\\n  switchyard ${command.name}${command.takesId === true ? ' [a-z-]+' : ''} --`));
      expect(help.text).toContain(`usage: switchyard ${command.name}`);
    }
    expect(parseCommandLine(['-h'], NOW)).toEqual(program);
    expect(parseCommandLine(['dlq', '--help'], NOW)).toEqual(parseCommandLine(['dlq', 'list', '--help'], NOW));
    // --help wins over missing or bad options: the operator is asking how to use it.
    expect(parseCommandLine(['replay', '--help', '--since', 'nonsense'], NOW).kind).toBe('help');
  });

  it('reads destinations list|enable|disable with the id and a reason', () => {
    expect(parseCommandLine(['destinations', 'disable', 'hooks-main', '--reason', 'maintenance until 14:00'], NOW)).toEqual({
      kind: 'destinations',
      config: undefined,
      action: 'disable',
      destination: 'hooks-main',
      reason: 'maintenance until 14:00',
      json: false,
    });
    expect(parseCommandLine(['destinations', 'list', '--json'], NOW)).toMatchObject({ kind: 'destinations', action: 'list', destination: undefined, json: true });
    const missing = parseCommandLine(['destinations', 'enable'], NOW);
    expect(missing.kind === 'usage-error' && missing.message).toContain('give the id of the destination');
    const two = parseCommandLine(['destinations', 'enable', 'a', 'b'], NOW);
    expect(two.kind === 'usage-error' && two.message).toContain('unexpected argument "b"');
    const unknown = parseCommandLine(['destinations', 'restart', 'a'], NOW);
    expect(unknown.kind === 'usage-error' && unknown.message).toContain('list, disable, enable');
    const listWithId = parseCommandLine(['destinations', 'list', 'a'], NOW);
    expect(listWithId.kind).toBe('usage-error');
  });

  it.each([
    [[], 'no command given'],
    [['frobnicate'], 'unknown command "frobnicate"'],
    [['dlq'], 'dlq list'],
    [['dlq', 'purge'], 'unknown subcommand "purge"'],
    [['gateway', 'extra'], 'unexpected argument "extra"'],
    [['gateway', '--destination', 'x'], '--destination is not an option of this command'],
    [['check-config', '--dry-run'], '--dry-run is not an option of this command'],
    [['dlq', 'list', '--destination', 'h', '--dry-run'], '--dry-run is not an option of this command'],
    [['replay', '--destination', 'h', '--json'], '--json is not an option of this command'],
    [['replay'], '--destination ID is required'],
    [['replay', '--blocked'], '--blocked needs --source ID'],
    [['replay', '--message', 'm-2'], '--destination ID is required'],
    [['replay', '--destination', 'h', '--message', 'm-2', '--limit', '2'], '--limit does not go with --message: --message moves one letter'],
    [['replay', '--destination', 'h', '--message='], '--message needs the messageId of a dead letter'],
    [['dlq', 'list', '--destination', 'h', '--message', 'm-2'], 'switchyard dlq list: --message is not an option of this command'],
    [['replay', '--source', 'web'], '--source ID goes with --blocked'],
    [['replay', '--blocked', '--source', 'web', '--destination', 'h'], '--blocked replays the calls of a source (--source ID), not the dead letters of a destination'],
    [['replay', '--blocked', '--source', 'web', '--limit', '3'], '--limit is not an option of --blocked'],
    [['replay', '--blocked', '--source', 'web', '--until', 'never'], '--until "never" is not a time'],
    [['dlq', 'list', '--destination='], '--destination ID is required'],
    [['replay', '--destination', 'h', '--limit', '0'], '--limit "0" is not a positive whole number'],
    [['replay', '--destination', 'h', '--limit', '2.5'], '--limit "2.5" is not a positive whole number'],
    [['replay', '--destination', 'h', '--limit', 'ten'], '--limit "ten" is not a positive whole number'],
    [['replay', '--destination', 'h', '--since', 'yesterday'], '--since "yesterday" is not a time'],
    [['dlq', 'list', '--destination', 'h', '--until', '2026-02-30'], '--until "2026-02-30" is not a time'],
    [['dlq', 'list', '--destination', 'h', '--since', '1h', '--until', '2h'], 'is not before --until'],
    [['gateway', '--bogus'], 'switchyard gateway: unknown option --bogus; its options are --config (and --help)'],
    [['all', '-x'], 'switchyard all: unknown option -x; its options are --config (and --help)'],
    [['dlq', 'list', '--destination', 'h', '--bogus=1'], 'unknown option --bogus; its options are --destination, --since, --until, --limit, --json, --config (and --help)'],
    [['--bogus'], 'switchyard: unknown option --bogus; see --help for the commands and their options'],
    [['replay', '--destination'], 'switchyard replay: --destination needs a value: --destination ID\n'],
    [['all', '--config'], 'switchyard all: --config needs a value: --config PATH\n'],
    [['dlq', 'list', '--destination', '--json'], '--destination needs a value: --destination ID (--json follows it; write a value that starts with "-" as --destination=--json)'],
    [['dlq', 'list', '--destination', 'h', '--json=yes'], 'switchyard dlq list: --json takes no value (give --json alone, not --json=yes)'],
    [['trace'], 'switchyard trace: give either --user ID or --anonymous-id ID'],
    [['trace', '--user', 'u', '--anonymous-id', 'a'], 'give either --user ID or --anonymous-id ID'],
    [['trace', '--user', 'u', '--since', 'last week'], '--since "last week" is not a time'],
    [['trace', '--user', 'u', '--destination', 'hooks'], 'switchyard trace: --destination is not an option of this command; its options are --user, --anonymous-id, --message, --since, --until, --json, --config (and --help)'],
    [['dlq', 'list', '--destination', 'h', '--user', 'u'], 'switchyard dlq list: --user is not an option of this command; its options are --destination'],
  ])('%j is a usage error: %s', (argv, message) => {
    const text = usageError(argv);
    expect(text).toContain(message);
    expect(text).toMatch(/\nusage: switchyard .*\nsee: switchyard .*--help$/);
  });

  it("never passes on node's own parseArgs wording", () => {
    for (const argv of [['all', '--bogus'], ['all', '--config'], ['dlq', 'list', '--json=1'], ['replay', '--destination', '--dry-run'], ['-z']]) {
      expect(usageError(argv)).not.toMatch(/Unknown option '|argument missing|positional argument|does not take an argument|ambiguous/);
    }
  });

  it('takes a value that starts with "-" when written with =', () => {
    expect(parseCommandLine(['dlq', 'list', '--destination=-odd-id'], NOW)).toMatchObject({ kind: 'dlq-list', query: { destination: '-odd-id' } });
  });

  it('names the command in its usage errors and points at its help', () => {
    expect(usageError(['replay', '--destination', 'h', '--since', 'x'])).toMatch(/^switchyard replay: .*\nusage: switchyard replay --destination ID .*\nsee: switchyard replay --help$/);
  });
});
