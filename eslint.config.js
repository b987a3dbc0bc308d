// @ts-check
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
    // Role shells a reader can follow in an outline: no function over ~80 lines (issue 12).
    // The base's flat tables and validators (calls/, config/, observability/metrics.ts) are not held to it.
    files: ['src/{gateway,router,delivery,audiences,runtime,kafka,admin,trace,cli}/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
);
