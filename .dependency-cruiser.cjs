// The layers of src/ (docs/architecture.md), lowest first. An import may only go to the
// same or a lower layer; roles do not import each other except through a hook.
//   1 base           src/errors.ts, src/version.ts, src/calls/, src/config/, src/shaping/, src/network/
//   2 observability  src/observability/
//   3 kafka          src/kafka/ (the port)
//   4 runtime        src/runtime/
//   5 roles          src/gateway/, src/router/, src/delivery/, src/audiences/
//   6 admin, trace   src/admin/, src/trace/ (operator reads across the roles)
//   7 cli            src/cli/ (the composition root: imports anything)
// Run by `npm run lint` (and so by `npm test`). Type-only imports count too.
//
// Exceptions are edges, not files: each names its one source file and its targets.
// ALLOWED ones are part of the design; TEMPORARY ones are debts to pay off (remove the
// exception with the import).

const BASE = '^src/(errors\\.ts|version\\.ts|calls/|config/|shaping/|network/)';
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
 * ALLOWED (the design): the router calls the audiences through the hook interface the
 * audiences implement (router → audiences/router-hook.ts), and that hook reads the
 * router's planned call and its track filter (its other side).
 * TEMPORARY: see each entry.
 */
const EXCEPTIONS = {
  // ALLOWED: the audience hook, the one shared interface between two roles.
  'src/router/router-service.ts': ['src/audiences/router-hook.ts'],
  // ALLOWED: the router's batch handler calls the audience hook.
  'src/router/router-batch.ts': ['src/audiences/router-hook.ts'],
  // ALLOWED: the hook's other side: the planned call it is given and the track filter it applies.
  'src/audiences/router-hook.ts': ['src/router/plan-call.ts', 'src/router/routing-rules.ts'],
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

/** Modules whose import cycle is let through, TEMPORARY each (none today). */
const TEMPORARY_CYCLES = [];

module.exports = {
  forbidden: [
    ...forbidden('base-imports-only-base', 'errors, version, calls/, config/, shaping/ and network/ are the base: pure, importing nothing above them', BASE, anyOf(ABOVE.base)),
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
