// @ts-check
import path from 'node:path';
import { builtinRules } from 'eslint/use-at-your-own-risk';
import tseslint from 'typescript-eslint';

/** kafkajs belongs to the Kafka port (src/kafka/): every other module of src/ uses the port's own types. */
const KAFKAJS_ONLY_IN_THE_PORT = {
  name: 'kafkajs',
  message: 'only src/kafka/ (the Kafka port) imports kafkajs, types included: use the port\'s records, producer, consumer runtime, admin and topology (src/kafka/index.ts) instead.',
};
/** So does @platformatic/kafka, the port's other client (src/kafka/platformatic-client.ts). */
const PLATFORMATIC_ONLY_IN_THE_PORT = {
  name: '@platformatic/kafka',
  message: 'only src/kafka/ (the Kafka port) imports @platformatic/kafka, types included: use the port (src/kafka/index.ts) instead.',
};
/** The port is used through src/kafka/index.ts only: its other files are its inside. */
const PORT_INSIDE = {
  group: ['**/kafka/*.js', '!**/kafka/index.js'],
  message: 'import the Kafka port from src/kafka/index.ts; its other files are its inside.',
};

/**
 * Functions longer than the limit because a long flat table is their clearest form,
 * each with why; no other function is exempt.
 */
const LONG_TABLES = [
  { file: 'src/observability/metrics.ts', name: 'createMetrics', why: 'every metric of docs/metrics.md, one entry each, in the order of the Metrics interface' },
  { file: 'src/calls/render.ts', name: 'bodyFields', why: "each call type's webhook body, its keys in the contract's order (docs/webhooks.md)" },
];

/** The name a function is known by: its own, its variable's, or its method's. */
function functionName(node) {
  if (node.id?.type === 'Identifier') return node.id.name;
  if (node.key?.type === 'Identifier') return node.key.name; // a method, reported as its definition
  const parent = node.parent;
  if (parent?.type === 'VariableDeclarator' && parent.id.type === 'Identifier') return parent.id.name;
  if ((parent?.type === 'MethodDefinition' || parent?.type === 'Property') && parent.key.type === 'Identifier') return parent.key.name;
  return undefined;
}

const coreMaxLines = /** @type {import('eslint').Rule.RuleModule} */ (builtinRules.get('max-lines-per-function'));

/** ESLint's max-lines-per-function, silent on the LONG_TABLES. */
const maxLinesPerFunction = {
  meta: coreMaxLines.meta,
  /** @param {import('eslint').Rule.RuleContext} context */
  create(context) {
    const file = path.relative(import.meta.dirname, context.filename).split(path.sep).join('/');
    const exempt = new Set(LONG_TABLES.filter((t) => t.file === file).map((t) => t.name));
    if (exempt.size === 0) return coreMaxLines.create(context);
    /** @param {import('eslint').Rule.ReportDescriptor} descriptor */
    const report = (descriptor) => {
      const name = 'node' in descriptor ? functionName(descriptor.node) : undefined;
      if (name === undefined || !exempt.has(name)) context.report(descriptor);
    };
    return coreMaxLines.create(Object.create(context, { report: { value: report } }));
  },
};

/** Files the operator console's program reads through src/admin/answers.ts: each imports nothing. */
const CONSOLE_READS_ALONE = ['src/observability/window-figures.ts', 'src/tracking-plans/violation-types.ts'];
/** Their specifiers from src/admin/, as an esquery regular expression (its slashes escaped). */
const READ_ALONE_SPECIFIERS = `/^(${CONSOLE_READS_ALONE.map((file) => `../${file.slice('src/'.length, -'.ts'.length)}.js`.replace(/[./]/g, (c) => `\\${c}`)).join('|')})$/`;

export default tseslint.config(
  { ignores: ['**/dist/**', 'node_modules/**', '.cache/**', 'coverage/**', 'scripts/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/kafka/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [KAFKAJS_ONLY_IN_THE_PORT, PLATFORMATIC_ONLY_IN_THE_PORT], patterns: [PORT_INSIDE] }],
    },
  },
  {
    // The admin API's answer types and the shapes they take from lower rooms are read by the
    // console, browser code checked without Node's types (console/tsconfig.json): an import
    // would bring its file, and all that file imports, into the console's program.
    files: CONSOLE_READS_ALONE,
    rules: {
      'no-restricted-syntax': ['error', ...['ImportDeclaration', 'ExportNamedDeclaration[source]', 'ExportAllDeclaration', 'ImportExpression', 'TSImportType'].map((selector) => ({
        selector,
        message: 'this file imports nothing: the operator console reads it (see the NOTE at its top)',
      }))],
    },
  },
  {
    files: ['src/admin/answers.ts'],
    rules: {
      'no-restricted-syntax': ['error', ...['ImportDeclaration', 'ExportNamedDeclaration', 'ExportAllDeclaration'].map((node) => ({
        selector: `${node}[source][source.value!=${READ_ALONE_SPECIFIERS}]`,
        message: `src/admin/answers.ts imports only ${CONSOLE_READS_ALONE.join(' and ')} (they import nothing): the operator console reads it (see its NOTE)`,
      })), { selector: 'ImportExpression, TSImportType', message: 'src/admin/answers.ts imports nothing but its listed files' }],
    },
  },
  {
    // Code a reader can follow in an outline: no function over 80 lines (blank lines and
    // comments not counted), but the LONG_TABLES.
    files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
    plugins: { switchyard: { rules: { 'max-lines-per-function': maxLinesPerFunction } } },
    rules: {
      'switchyard/max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
);
