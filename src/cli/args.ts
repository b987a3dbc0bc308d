// The command line of docs/cli.md: which command, which options, and the help text of
// each. Pure: main.ts reads argv and env and acts on the result.
import { parseArgs } from 'node:util';
import { CLI_FIELD_NAMES, parseTraceQuery } from '../trace/trace-query.js';
import type { TraceQuery } from '../trace/trace-query.js';
import { parseTimeRange } from './time-range.js';
import type { TimeRange } from './time-range.js';

export const ROLE_COMMANDS = ['gateway', 'router', 'deliverer', 'all'] as const;
export type RoleCommand = (typeof ROLE_COMMANDS)[number];

type OptionName = 'config' | 'destination' | 'blocked' | 'source' | 'since' | 'until' | 'limit' | 'dry-run' | 'json' | 'user' | 'anonymous-id' | 'message' | 'reason';

interface CommandSpec {
  name: string;
  summary: string;
  usage: string;
  options: readonly OptionName[];
  /** This command's own line for an option, where it differs from OPTION_HELP's. */
  optionHelp?: Partial<Record<OptionName, string>>;
  example: string;
  notes?: string;
  /** The command takes one positional argument (a destination id). */
  takesId?: boolean;
}

const OPTION_HELP: Record<OptionName, string> = {
  config: '--config PATH       the config file (else $SWITCHYARD_CONFIG, else config/switchyard.yaml)',
  destination: '--destination ID    the destination whose dead letters to use (its id in the config)',
  blocked: '--blocked           route the calls a tracking plan blocked again (calls.blocked), instead of dead letters',
  source: '--source ID         with --blocked: the source whose blocked calls to route again',
  since: '--since TIME        only letters dead-lettered at or after TIME',
  until: '--until TIME        only letters dead-lettered before TIME',
  limit: '--limit N           at most N letters (in the order each partition holds them)',
  'dry-run': '--dry-run           print the letters it would move, move none',
  json: '--json              one JSON object per line: {"messageId","deadLetteredAt","attempts","error","offset","partition"}',
  user: '--user ID           the userId whose calls to follow',
  'anonymous-id': '--anonymous-id ID   the anonymousId whose calls to follow (the key of calls without a userId)',
  message: '--message ID        only the call with this messageId',
  reason: '--reason TEXT       why (kept with the state, shown by destinations list, GET /v1/destinations and the console)',
};

const TIME_NOTE = 'TIME is ISO 8601 (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d).';

const ROLE_SUMMARY: Record<RoleCommand, string> = {
  gateway: 'run the HTTP ingestion API (Segment tracking API) that writes calls to Kafka',
  router: 'route calls to destination topics (integrations, track filters, audiences, deletions)',
  deliverer: 'deliver events as signed webhooks, with retry tiers and dead letters',
  all: 'run the gateway, router and deliverer in one process (a laptop, a small install)',
};

export const COMMANDS: readonly CommandSpec[] = [
  ...ROLE_COMMANDS.map((role) => ({
    name: role,
    summary: ROLE_SUMMARY[role],
    usage: `switchyard ${role} [--config PATH]`,
    options: ['config'] as const,
    example: `switchyard ${role} --config /etc/switchyard/switchyard.yaml`,
    notes: 'Runs until SIGTERM or SIGINT, then finishes in-flight work and exits 0. $KAFKA_BROKERS overrides kafka.brokers.',
  })),
  {
    name: 'check-config',
    summary: 'validate a config file and print it resolved, secrets masked; exit 1 on a problem',
    usage: 'switchyard check-config [--config PATH]',
    options: ['config'],
    example: 'switchyard check-config --config config/example.yaml',
  },
  {
    name: 'replay',
    summary: "move a destination's dead letters back for delivery, with a fresh retry window",
    usage:
      'switchyard replay --destination ID [--since TIME] [--until TIME] [--limit N] [--dry-run] [--config PATH] | replay --destination ID --message MID [--dry-run] [--config PATH] | ' +
      'replay --blocked --source ID [--since TIME] [--until TIME] [--dry-run] [--config PATH]',
    options: ['destination', 'message', 'blocked', 'source', 'since', 'until', 'limit', 'dry-run', 'config'],
    optionHelp: { message: '--message MID       only the dead letter of this messageId: one letter, once' },
    example: 'switchyard replay --destination hooks-main --since 2h --dry-run --config /etc/switchyard/switchyard.yaml',
    notes:
      `${TIME_NOTE} Prints every letter it moves and how many. A letter is moved at most once: a later replay skips the letters an earlier replay moved, ` +
      "and still moves the ones an earlier replay's range or --limit left out. " +
      'With --message MID: the one dead letter of that messageId (the first not yet replayed, should there be several); run again, it says the letter was already replayed and moves nothing; ' +
      'none of that messageId: exit 1. ' +
      'A duration counts back from when the command starts: give ISO times to move exactly what a dry run showed. ' +
      "With --blocked --source ID: the source's calls its tracking plan blocked, received in the range, are routed again through the config and plan as they are now; " +
      'those that still violate stay blocked (written to calls.blocked again), and a later replay tries them again (docs/tracking-plans.md#replay).',
  },
  {
    name: 'dlq list',
    summary: "list a destination's dead letters (time, message id, attempts, error per URL) without consuming them",
    usage: 'switchyard dlq list --destination ID [--since TIME] [--until TIME] [--limit N] [--json] [--config PATH]',
    options: ['destination', 'since', 'until', 'limit', 'json', 'config'],
    optionHelp: { limit: '--limit N           only the N oldest letters in the range' },
    example: 'switchyard dlq list --destination hooks-main --since 1d --json --config /etc/switchyard/switchyard.yaml',
    notes: `${TIME_NOTE} Letters are listed oldest first; the time of a letter is its last-attempt-at header, else its Kafka timestamp.`,
  },
  {
    name: 'trace',
    summary: "say what happened to each of a user's calls at each destination, and why",
    usage: 'switchyard trace --user ID | --anonymous-id ID [--message ID] [--since TIME] [--until TIME] [--json] [--config PATH]',
    options: ['user', 'anonymous-id', 'message', 'since', 'until', 'json', 'config'],
    optionHelp: {
      since: '--since TIME        calls received at or after TIME (default 24h)',
      until: '--until TIME        calls received before TIME (default: up to now)',
      json: '--json              one JSON document: {"userId","since","until","reasonsFrom","messages":[…]}',
    },
    example: 'switchyard trace --user u-1 --since 2h --config /etc/switchyard/switchyard.yaml',
    notes:
      `${TIME_NOTE} Reads the user's partition of calls, calls.invalid and each destination's topics over the window; writes nothing. ` +
      'Filter reasons come from the config given, as it is now. Notes (a window cut short by retention) go to stderr.',
  },
  {
    name: 'destinations list',
    summary: "print each destination's state (active, failing, disabled), since when, by whom and why",
    usage: 'switchyard destinations list [--json] [--config PATH]',
    options: ['json', 'config'],
    optionHelp: { json: '--json              one JSON object per line: {"id","state","since","by"?,"reason"?,"configEnabled","history"}' },
    example: 'switchyard destinations list --config /etc/switchyard/switchyard.yaml',
    notes: 'Reads the destinations.state topic, the state every deliverer pod follows (docs/webhooks.md#automatic-disabling).',
  },
  {
    name: 'destinations disable',
    summary: 'stop delivering to a destination (maintenance); its events wait in its topics',
    usage: 'switchyard destinations disable ID [--reason TEXT] [--config PATH]',
    options: ['reason', 'config'],
    takesId: true,
    example: 'switchyard destinations disable hooks-main --reason "receiver maintenance until 14:00" --config /etc/switchyard/switchyard.yaml',
    notes: 'Every deliverer pod stops the lanes of the destination within a second or so. Nothing is dead-lettered or dropped while it is disabled.',
  },
  {
    name: 'destinations enable',
    summary: 'deliver to a disabled destination again, from where it stopped',
    usage: 'switchyard destinations enable ID [--reason TEXT] [--config PATH]',
    options: ['reason', 'config'],
    takesId: true,
    example: 'switchyard destinations enable hooks-main --config /etc/switchyard/switchyard.yaml',
    notes: 'Undoes a disable by Switchyard (settings.autoDisable) or by a person. A config with enabled: false wins over it.',
  },
];

export function programHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'switchyard: a Kafka-based event router (Segment-spec calls in, signed webhooks out).',
    '',
    'usage: switchyard <command> [options]',
    '       switchyard <command> --help     options and an example of one command',
    '       switchyard --version',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'The config path is --config, else $SWITCHYARD_CONFIG, else config/switchyard.yaml.',
    '$KAFKA_BROKERS (comma-separated host:port) overrides kafka.brokers.',
    'Exit codes: 0 ok, 1 bad config or usage, 2 runtime failure.',
    '',
    'example:',
    '  switchyard all --config config/example.yaml',
  ].join('\n');
}

export function commandHelp(spec: CommandSpec): string {
  return [
    `switchyard ${spec.name}: ${spec.summary}`,
    '',
    `usage: ${spec.usage}`,
    '',
    'options:',
    ...spec.options.map((o) => `  ${spec.optionHelp?.[o] ?? OPTION_HELP[o]}`),
    `  --help              this help`,
    ...(spec.notes ? ['', spec.notes] : []),
    '',
    'example:',
    `  ${spec.example}`,
  ].join('\n');
}

export interface LetterQuery {
  destination: string;
  range: TimeRange;
  limit: number | undefined;
}

export type Invocation =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  /** `message` says what is wrong and what to do; print it with the usage hint to stderr, exit 1. */
  | { kind: 'usage-error'; message: string }
  | { kind: 'role'; role: RoleCommand; config: string | undefined }
  | { kind: 'check-config'; config: string | undefined }
  /** `messageId`: `--message`, one letter (docs/cli.md#operator-commands). */
  | { kind: 'replay'; config: string | undefined; query: LetterQuery; dryRun: boolean; messageId?: string }
  | { kind: 'replay-blocked'; config: string | undefined; source: string; range: TimeRange; dryRun: boolean }
  | { kind: 'dlq-list'; config: string | undefined; query: LetterQuery; json: boolean }
  | { kind: 'trace'; config: string | undefined; query: TraceQuery; json: boolean }
  | { kind: 'destinations'; config: string | undefined; action: 'list' | 'enable' | 'disable'; destination: string | undefined; reason: string | undefined; json: boolean };

function usageError(message: string, spec?: CommandSpec): Invocation {
  const hint = spec ? `see: switchyard ${spec.name} --help` : 'see: switchyard --help';
  return { kind: 'usage-error', message: `${message}\nusage: ${spec ? spec.usage : 'switchyard <command> [options]'}\n${hint}` };
}

const PARSE_OPTIONS = {
  config: { type: 'string' },
  destination: { type: 'string' },
  blocked: { type: 'boolean' },
  source: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  user: { type: 'string' },
  'anonymous-id': { type: 'string' },
  message: { type: 'string' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;

/** Reads argv (without node and the script) into what to run; `nowMs` anchors `--since 2h`. */
export function parseCommandLine(argv: readonly string[], nowMs: number): Invocation {
  // NOTE: not strict: node's own messages for an unknown option or a missing value name
  // neither the command nor its options ("To specify a positional argument starting with
  // a '-', place it at the end of the command after '--'"); badOption() says it in our terms.
  const parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: false, tokens: true, options: PARSE_OPTIONS });
  const { positionals, tokens } = parsed;
  const values = parsed.values as OptionValues;
  if (values.version === true) return { kind: 'version' };
  if (positionals.length === 0) {
    if (values.help === true) return { kind: 'help', text: programHelp() };
    const bad = badOption(tokens, undefined);
    return usageError(bad === undefined ? 'switchyard: no command given' : `switchyard: ${bad}`);
  }
  const spec = findCommand(positionals);
  if (!spec) {
    if (positionals[0] === 'destinations') {
      const list = COMMANDS.filter((c) => c.name.startsWith('destinations ')).map((c) => c.name.slice('destinations '.length));
      if (values.help && positionals.length === 1) return { kind: 'help', text: commandHelp(COMMANDS.find((c) => c.name === 'destinations list')!) };
      return usageError(positionals.length === 1 ? `switchyard destinations: say what to do: ${list.join(', ')}` : `switchyard destinations: unknown subcommand "${positionals[1]}"; the ones there are: ${list.join(', ')}`);
    }
    if (positionals[0] === 'dlq') {
      if (values.help && positionals.length === 1) return { kind: 'help', text: commandHelp(COMMANDS.find((c) => c.name === 'dlq list')!) };
      return usageError(
        positionals.length === 1 ? 'switchyard dlq: say what to do with the dead letters: dlq list' : `switchyard dlq: unknown subcommand "${positionals[1]}"; the one there is: dlq list`,
      );
    }
    return usageError(`switchyard: unknown command "${positionals[0]}"; the commands are ${COMMANDS.map((c) => c.name).join(', ')}`);
  }
  if (values.help === true) return { kind: 'help', text: commandHelp(spec) };
  const bad = badOption(tokens, spec);
  if (bad !== undefined) return usageError(`switchyard ${spec.name}: ${bad}`, spec);
  const extra = positionals.slice(spec.name.split(' ').length);
  if (spec.takesId === true) {
    if (extra.length === 0) return usageError(`switchyard ${spec.name}: give the id of the destination (as in the config)`, spec);
    if (extra.length > 1) return usageError(`switchyard ${spec.name}: unexpected argument "${extra[1]}" (one destination at a time; quote a --reason of several words)`, spec);
  } else if (extra.length > 0) return usageError(`switchyard ${spec.name}: unexpected argument "${extra[0]}"`, spec);
  if (spec.name.startsWith('destinations ')) {
    const action = spec.name.slice('destinations '.length) as 'list' | 'enable' | 'disable';
    return { kind: 'destinations', config: values.config, action, destination: extra[0], reason: values.reason, json: values.json === true };
  }

  if ((ROLE_COMMANDS as readonly string[]).includes(spec.name)) return { kind: 'role', role: spec.name as RoleCommand, config: values.config };
  if (spec.name === 'check-config') return { kind: 'check-config', config: values.config };
  if (spec.name === 'trace') {
    const fields = { userId: values.user, anonymousId: values['anonymous-id'], messageId: values.message, since: values.since, until: values.until };
    const parsed = parseTraceQuery(fields, CLI_FIELD_NAMES, nowMs);
    if (!parsed.ok) return usageError(`switchyard trace: ${parsed.message}`, spec);
    return { kind: 'trace', config: values.config, query: parsed.query, json: values.json === true };
  }

  if (spec.name === 'replay' && (values.blocked === true || values.source !== undefined)) return blockedReplay(spec, values, nowMs);
  const query = letterQuery(spec, values, nowMs);
  if (!query.ok) return usageError(`switchyard ${spec.name}: ${query.message}`, spec);
  if (spec.name === 'replay') {
    const replay: Invocation = { kind: 'replay', config: values.config, query: query.value, dryRun: values['dry-run'] === true };
    if (values.message === undefined) return replay;
    if (values.message === '') return usageError('switchyard replay: --message needs the messageId of a dead letter (switchyard dlq list shows them)', spec);
    if (values.limit !== undefined) return usageError('switchyard replay: --limit does not go with --message: --message moves one letter', spec);
    return { ...replay, messageId: values.message };
  }
  return { kind: 'dlq-list', config: values.config, query: query.value, json: values.json === true };
}

type OptionValues = { [name in keyof typeof PARSE_OPTIONS]?: (typeof PARSE_OPTIONS)[name]['type'] extends 'string' ? string : boolean };

type Token = ReturnType<typeof parseArgs>['tokens'] extends (infer T)[] | undefined ? T : never;

/**
 * The first option the command cannot take, said in its own terms: unknown, not one of
 * this command's, a value missing or given to a flag. Undefined when all are fine.
 */
function badOption(tokens: readonly Token[], spec: CommandSpec | undefined): string | undefined {
  const own = spec ? spec.options : [];
  const optionsText = own.length > 0 ? `its options are ${own.map((o) => `--${o}`).join(', ')} (and --help)` : 'see --help for the commands and their options';
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === 'help') continue;
    const name = token.name as OptionName | 'version';
    const known = Object.hasOwn(PARSE_OPTIONS, name);
    if (!known) return `unknown option ${token.rawName}; ${optionsText}`;
    if (name === 'version') continue;
    if (spec && !own.includes(name)) return `--${name} is not an option of this command; ${optionsText}`;
    const wantsValue = PARSE_OPTIONS[name].type === 'string';
    if (wantsValue && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))) {
      const form = OPTION_HELP[name].split(/\s+/).slice(0, 2).join(' ');
      if (token.value === undefined) return `${token.rawName} needs a value: ${form}`;
      return `${token.rawName} needs a value: ${form} (${token.value} follows it; write a value that starts with "-" as --${name}=${token.value})`;
    }
    if (!wantsValue && token.inlineValue) return `--${name} takes no value (give --${name} alone, not --${name}=${token.value ?? ''})`;
  }
  return undefined;
}

function findCommand(positionals: readonly string[]): CommandSpec | undefined {
  const two = positionals.slice(0, 2).join(' ');
  return COMMANDS.find((c) => c.name === two) ?? COMMANDS.find((c) => c.name === positionals[0]);
}

function blockedReplay(spec: CommandSpec, values: OptionValues, nowMs: number): Invocation {
  const fail = (message: string) => usageError(`switchyard replay: ${message}`, spec);
  if (values.blocked !== true) return fail('--source ID goes with --blocked: switchyard replay --blocked --source ID replays the calls a tracking plan blocked');
  if (values.destination !== undefined) return fail('--blocked replays the calls of a source (--source ID), not the dead letters of a destination: give --blocked --source ID, or --destination ID alone');
  if (values.limit !== undefined) return fail('--limit is not an option of --blocked: narrow the calls with --since and --until');
  if (values.source === undefined || values.source === '') return fail('--blocked needs --source ID: the id of the source whose blocked calls to route again');
  const range = parseTimeRange(values, nowMs);
  if (!range.ok) return fail(range.message);
  return { kind: 'replay-blocked', config: values.config, source: values.source, range: range.value, dryRun: values['dry-run'] === true };
}

function letterQuery(
  spec: CommandSpec,
  values: { destination?: string | undefined; since?: string | undefined; until?: string | undefined; limit?: string | undefined },
  nowMs: number,
): { ok: true; value: LetterQuery } | { ok: false; message: string } {
  if (values.destination === undefined || values.destination === '') {
    return { ok: false, message: `--destination ID is required: the id of a destination in the config (${spec.name === 'replay' ? 'whose dead letters to move' : 'whose dead letters to list'})` };
  }
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = /^\d+$/.test(values.limit) ? Number(values.limit) : Number.NaN;
    if (!Number.isSafeInteger(limit) || limit <= 0) return { ok: false, message: `--limit ${JSON.stringify(values.limit)} is not a positive whole number: give one like --limit 10` };
  }
  const range = parseTimeRange(values, nowMs);
  if (!range.ok) return range;
  return { ok: true, value: { destination: values.destination, range: range.value, limit } };
}
