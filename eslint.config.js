// Lint rules: typescript-eslint's recommended type-aware set, plus the few
// rules that guard this project's promises (no floating promises in a
// long-running daemon, no console in daemon code: use the redacting logger).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {
    // proto/messages.cjs is generated (scripts/proto-gen.mjs) and compared byte for byte by its test.
    ignores: ['dist/**', '.cache/**', 'node_modules/**', 'demo-mount/**', '.tap/**', 'proto/messages.cjs'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // tap's t.test() returns a promise that tap itself tracks.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**'],
    rules: {
      'no-console': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // V8 keeps what an object literal's getter or setter closes over alive through young-generation
      // collections; on the Mount path that promoted ~12 KB per Mount (src/util/shared-call.ts, Waiter).
      'no-restricted-syntax': [
        'error',
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message:
            'no getters or setters in object literals (V8 promotes what they close over): use a class or a plain property',
        },
      ],
    },
  },
)
