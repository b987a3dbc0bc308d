// The layers of src/ (docs/architecture.md), lowest first. An import may only go to the
// same or a lower layer; roles do not import each other except through a hook.
//   1 base           src/errors.ts, src/version.ts, src/calls/, src/config/, src/shaping/, src/network/, src/limits/, src/tracking-plans/
//   2 observability  src/observability/
//   3 kafka          src/kafka/ (the port)
//   4 runtime        src/runtime/
//   5 roles          src/gateway/, src/router/, src/delivery/, src/audiences/
//                    (src/delivery/dlq/, the dead-letter tooling, is a room of its own inside
//                    delivery/: it may use the deliverer's files, the deliverer never imports it)
//   6 admin, trace   src/admin/, src/trace/ (operator reads across the roles)
//   7 cli            src/cli/ (the composition root: imports anything)
// Run by `npm run lint` (and so by `npm test`). Type-only imports count too.
//
// Exceptions are edges, not files: each names its one source file and its targets.
// ALLOWED ones are part of the design; TEMPORARY ones are debts to pay off (remove the
// exception with the import).

const BASE = '^src/(errors\\.ts|version\\.ts|calls/|config/|shaping/|network/|limits/|tracking-plans/)';
const OBSERVABILITY = '^src/observability/';
const KAFKA = '^src/kafka/';
const RUNTIME = '^src/runtime/';
const ROLES = '^src/(gateway|router|delivery|audiences)/';
const ADMIN = '^src/(admin|trace)/';
const CLI = '^src/cli/';

/** Layer by layer: what each may NOT import (everything above it). */
const ABOVE = {
  base: [OBSERVABILITY, KAFKA, RUNTIME, ROLES, ADMIN, CLI],
  observability: [KAFKA, RUNTIME, ROLES, ADMIN, CLI],
  kafka: [RUNTIME, ROLES, ADMIN, CLI],
  runtime: [ROLES, ADMIN, CLI],
  roles: [ADMIN, CLI],
  admin: [CLI],
};

/**
 * Edges allowed across the rules, by source file. Each value lists the target files.
 * ALLOWED (the design): the audiences implement the hook the router calls, whose
 * interface lives with its caller (src/router/audience-hook.ts), and read the router's
 * planned call and its track filter: the arrow between the two rooms goes one way.
 * TEMPORARY: see each entry.
 */
const EXCEPTIONS = {
  // ALLOWED: the audience hook: the interface it implements, the planned call it is given and the track filter it applies.
  'src/audiences/router-hook.ts': ['src/router/audience-hook.ts', 'src/router/plan-call.ts', 'src/router/routing-rules.ts'],
  // ALLOWED: the replay of blocked calls keeps its place as the dead-letter replay does: its ledger, read and written the same way, and its reader.
  'src/router/replay-blocked.ts': ['src/delivery/dlq/replay.ts', 'src/delivery/dlq/replay-ledger.ts', 'src/delivery/dlq/dead-letters.ts', 'src/delivery/dlq/scan-topic.ts'],
};

const exactly = (path) => `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
// An empty list matches nothing ('(?!)'), never everything.
const anyOf = (patterns) => (patterns.length === 0 ? '(?!)' : `(${patterns.join('|')})`);
const exceptionSources = Object.keys(EXCEPTIONS);

/**
 * The rule `name`: no import from `from` to `to`, except to `toPathNot` (which may use
 * `$1`, the first group of `from`; `sameGroup(path)` gives its value for an exception's
 * source). Each exception's source gets the rule with its listed targets taken out.
 */
function forbidden(name, comment, from, to, toPathNot, sameGroup) {
  const general = {
    name,
    comment,
    severity: 'error',
    from: { path: from, pathNot: anyOf(exceptionSources.map(exactly)) },
    to: { path: to, ...(toPathNot ? { pathNot: toPathNot } : {}) },
  };
  const perException = exceptionSources
    .filter((source) => new RegExp(from).test(source))
    .map((source) => {
      const own = toPathNot && sameGroup ? [toPathNot.replace('$1', sameGroup(source))] : toPathNot ? [toPathNot] : [];
      return {
        name,
        comment: `${comment} (the listed exceptions of ${source} taken out)`,
        severity: 'error',
        from: { path: exactly(source) },
        to: { path: to, pathNot: anyOf([...own, ...EXCEPTIONS[source].map(exactly)]) },
      };
    });
  return [general, ...perException];
}

const ROLE_OF = (path) => path.split('/')[1];

/**
 * The rooms of docs/architecture.md, for the rule against two-way arrows: the base is
 * one room, each role is its own, and so is the dead-letter tooling inside delivery/.
 */
const DLQ = '^src/delivery/dlq/';
// NOTE: dlq before delivery: roomOf takes the first room whose pattern matches.
const ROOMS = { base: BASE, observability: OBSERVABILITY, kafka: KAFKA, runtime: RUNTIME, gateway: '^src/gateway/', router: '^src/router/', dlq: DLQ, delivery: '^src/delivery/', audiences: '^src/audiences/', admin: ADMIN, cli: CLI };
const roomOf = (path) => Object.keys(ROOMS).find((room) => new RegExp(ROOMS[room]).test(path));

/**
 * Exceptions whose two-way arrow between rooms is let through, TEMPORARY each (see the
 * exception): remove the name with the exception.
 */
const TEMPORARY_TWO_WAY = [];
for (const source of TEMPORARY_TWO_WAY) {
  if (!(source in EXCEPTIONS)) throw new Error(`.dependency-cruiser.cjs: ${source} is in TEMPORARY_TWO_WAY but has no exception any more; remove it from TEMPORARY_TWO_WAY`);
}

/**
 * No two-way arrow between rooms: a room an exception lets a file import never imports
 * that file's room back. Every other arrow between rooms goes down the layers (the
 * rules above), so with this one an arrow between two rooms goes one way only; a hook's
 * interface lives with its caller or lower.
 */
function oneWayBetweenRooms() {
  return Object.entries(EXCEPTIONS)
    .filter(([source]) => !TEMPORARY_TWO_WAY.includes(source))
    .flatMap(([source, targets]) => {
      const from = roomOf(source);
      return [...new Set(targets.map(roomOf))]
        .filter((to) => to !== from)
        .map((to) => ({
          name: 'no-two-way-arrows-between-rooms',
          comment: `${source} may import ${to} (an exception), so ${to} never imports ${from}: an arrow between two rooms goes one way`,
          severity: 'error',
          from: { path: ROOMS[to] },
          to: { path: ROOMS[from] },
        }));
    });
}

/** Modules whose import cycle is let through, TEMPORARY each (none today). */
const TEMPORARY_CYCLES = [];

module.exports = {
  forbidden: [
    ...forbidden('base-imports-only-base', 'errors, version, calls/, config/, shaping/, network/, limits/ and tracking-plans/ are the base: pure, importing nothing above them', BASE, anyOf(ABOVE.base)),
    ...forbidden('observability-imports-down', 'observability/ imports only the base (the lag sampler takes its own LagSource interface)', OBSERVABILITY, anyOf(ABOVE.observability)),
    ...forbidden('kafka-imports-down', 'kafka/ (the port) imports only the base and observability/', KAFKA, anyOf(ABOVE.kafka)),
    ...forbidden('runtime-imports-down', 'runtime/ imports only kafka/, observability/ and the base', RUNTIME, anyOf(ABOVE.runtime)),
    ...forbidden('roles-import-down', 'a role imports runtime/, kafka/, observability/ and the base, never admin/, trace/ or cli/', ROLES, anyOf(ABOVE.roles)),
    ...forbidden('admin-imports-down', 'admin/ and trace/ import the roles and below (and each other), never cli/', ADMIN, anyOf(ABOVE.admin)),
    ...forbidden(
      'roles-do-not-import-each-other',
      'gateway/, router/, delivery/ and audiences/ share code through lower layers, not through each other (hooks are listed exceptions)',
      '^src/(gateway|router|delivery|audiences)/',
      '^src/(gateway|router|delivery|audiences)/',
      '^src/$1/',
      ROLE_OF,
    ),
    ...oneWayBetweenRooms(),
    {
      name: 'deliverer-does-not-import-dlq',
      comment: 'src/delivery/dlq/ (dlq list, replay and their ledger: operator commands) uses the deliverer\'s files (the envelope); the deliverer never imports the tooling',
      severity: 'error',
      from: { path: '^src/delivery/', pathNot: DLQ },
      to: { path: DLQ },
    },
    {
      name: 'no-circular',
      comment: 'no import cycles: a cycle makes start-up order and module state depend on who imports first',
      severity: 'error',
      from: { path: '^src/' },
      // Cycles through the modules of TEMPORARY_CYCLES are let through (see there).
      to: TEMPORARY_CYCLES.length === 0 ? { circular: true } : { circular: true, viaOnly: { pathNot: TEMPORARY_CYCLES.map(exactly) } },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
