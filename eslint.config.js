// One linter for the whole tree, with the type-aware rules that catch lost promises (a floating
// promise in a server is an unhandled rejection or a request never answered).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** node:test's registration calls return promises the runner itself awaits. */
const TEST_CALLS = ['test', 'describe', 'it', 'suite', 'before', 'after', 'beforeEach', 'afterEach'];

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'bench/results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
        performance: 'readonly',
        queueMicrotask: 'readonly',
        setImmediate: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        Headers: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Named exports only: a default export has no name to search for.' },
        {
          selector: "CallExpression[callee.property.name='prepare']",
          message:
            'Prepare SQLite statements with prepared() (src/store/sqlite/prepared.ts): better-sqlite3 aborts Node.js 24.19+ when a statement is garbage-collected.',
        },
      ],
    },
  },
  {
    // The one place a statement is prepared, and kept; and this file, whose default export ESLint requires.
    files: ['src/store/sqlite/prepared.ts', 'eslint.config.js'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: TEST_CALLS }] }],
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Sizes a reader can hold in mind (docs/design.md, Layout): short functions in the service,
    // files under 400 lines there and under 500 in the tests and the benchmark kit.
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    rules: {
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
      'max-lines': ['error', { max: 400 }],
    },
  },
  { files: ['tests/**/*.ts', 'bench/**/*.ts', 'support/**/*.ts'], rules: { 'max-lines': ['error', { max: 500 }] } },
  // Written by openapi-typescript (support/client-types.ts), one type per named schema: its length is the API's.
  { files: ['src/client/openapi.generated.ts'], rules: { 'max-lines': 'off' } },
);
