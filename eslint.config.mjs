// @ts-check
// Lint: typescript-eslint's type-checked recommended rules for every TypeScript file, floating
// promises as errors (an un-awaited activity, query or pool call is a bug here, not a style), and
// the layering (docs/architecture.md): each folder is one layer and may import only the layers
// below it. Workflow code stays deterministic, so `workflows/` may import only the workflow SDK,
// the vocabulary, its own files and activity *types*. And no import circles.
import { builtinModules } from 'node:module';
import path from 'node:path';
import eslint from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import local from './dev/lint/no-import-cycle.mjs';

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const anyOf = (names) => names.map(escape).join('|');

const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));
/** Modules that do I/O or belong to the client and worker side of Temporal. */
const sideEffectModules = [
  'pg',
  'stripe',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/testing',
];
const BUILTIN = `node:.*|(?:${anyOf(nodeBuiltins)})(?:/.*)?`;
const SIDE_EFFECT = `(?:${anyOf(sideEffectModules)})(?:/.*)?`;
const ACTIVITIES = String.raw`\.\./activities(?:/.*)?`;
const ALLOWED = String.raw`@temporalio/(?:workflow|common)(?:/.*)?|\./.*|\.\./vocabulary(?:/[a-z-]+)?`;

/** A project folder, from any depth below another top-level folder (`../store`, `../../store/holds`). */
const folder = (...names) => `^(?:\\.\\./)+(?:${names.join('|')})(?:/.*)?$`;
const pkg = (...names) => `^(?:${names.map(escape).join('|')})(?:/.*)?$`;

/**
 * One layer's import rule: each entry forbids a pattern with the reason. `typesOk` lets `import type`
 * through (a layer may name another's types without running its code).
 */
const layer = (files, rules, extra = {}) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: rules.map(([regex, message, typesOk]) => ({
          regex,
          message,
          ...(typesOk ? { allowTypeImports: true } : {}),
        })),
      },
    ],
    ...extra,
  },
});

/** Routes and CLIs read and write through the store: no SQL of their own. */
const noSql = {
  'no-restricted-syntax': [
    'error',
    {
      selector: "CallExpression[callee.property.name='query']",
      message: 'No SQL outside store/: call a store function (store/*.ts) instead.',
    },
  ],
};

export default defineConfig(
  {
    ignores: ['node_modules/', '.data/', '.tools/', 'dist/', 'coverage/', 'build/'],
  },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      // A shutdown closure may name a resource before it exists (`let stack; const stop = () => stack?.stop(); stack = await ...`).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `async` without `await` is deliberate here: activities (`async noop()`) and helpers that must
      // reject rather than throw synchronously. The real bug (a promise not awaited) is caught by
      // no-floating-promises and no-misused-promises.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // No import circles among the project's own modules (dev/lint/no-import-cycle.mjs). `import type`
    // counts: a circle of types costs nothing at runtime, but it is still two modules that each need
    // the other (ApiDeps named the waiting room's type, the waiting room took ApiDeps), one value
    // import away from a runtime circle and its half-initialised module. That is why this is a rule
    // of our own, not import-x/no-cycle, which skips type-only imports with no option to count them:
    // of the six circles this rule found when it came in, it would have seen one (config/), none of
    // api/'s. The payments emulator's package (packages/stripe-emulator) is held to it too.
    files: ['**/*.{ts,mts,cts,js,mjs,cjs}'],
    plugins: { local },
    rules: { 'local/no-import-cycle': ['error', { tsconfig: path.join(import.meta.dirname, 'tsconfig.json') }] },
  },
  {
    // Tests poke at JSON bodies, emulator events and rows of arbitrary shape on purpose: `any`
    // there is the honest type, and the unsafe-* family would only ask for casts that prove nothing.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Workflow code is replayed: it must stay deterministic and free of I/O. Only the workflow SDK,
    // @temporalio/common, the workflows' own files and `import type` from activities are allowed.
    // The patterns are disjoint so one import gets one message.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(?:${BUILTIN})$`,
              message: 'Node built-ins are not available in workflow code: do the work in an activity.',
            },
            {
              regex: `^${SIDE_EFFECT}$`,
              message:
                'Workflow code does no I/O and runs in the workflow sandbox: Postgres, Stripe and the Temporal client/worker/activity SDKs belong to activities/, worker/ and api/.',
            },
            {
              regex: `^${ACTIVITIES}$`,
              allowTypeImports: true,
              message:
                'Workflows import activity *types* only (`import type`), and call activities through proxyActivities.',
            },
            {
              regex: `^(?!(?:${ALLOWED}|${ACTIVITIES}|${BUILTIN}|${SIDE_EFFECT})$).*`,
              message:
                'workflows/ may import only @temporalio/workflow, @temporalio/common, its own files and `import type` from ../activities.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval', 'clearImmediate'].map(
          (name) => ({
            name,
            message: 'Use `sleep` or `condition(fn, timeout)` from @temporalio/workflow: durable timers.',
          }),
        ),
        { name: 'fetch', message: 'Workflow code does no I/O: call an activity.' },
        { name: 'process', message: 'Workflow code reads no environment or process state: pass it in the input.' },
        { name: 'Buffer', message: 'Buffer is a Node built-in, not available in the workflow sandbox.' },
      ],
      'no-restricted-properties': [
        'error',
        ...['setTimeout', 'setInterval', 'setImmediate'].map((property) => ({
          object: 'globalThis',
          property,
          message: 'Use `sleep` or `condition(fn, timeout)` from @temporalio/workflow: durable timers.',
        })),
      ],
    },
  },
  layer(
    ['vocabulary/**/*.ts'],
    [
      [
        '^(?!\\./[a-z-]+$).*',
        'vocabulary/ imports nothing but itself: every layer, workflow code included, shares it.',
      ],
    ],
  ),
  layer(
    ['config/**/*.ts'],
    [
      [
        folder('store', 'activities', 'workflows', 'client', 'api', 'worker', 'ops', 'dev'),
        'config/ reads the environment and builds clients; it knows no layer above it.',
      ],
    ],
  ),
  layer(
    ['store/**/*.ts'],
    [
      [
        pkg('@temporalio', 'koa', '@koa', 'stripe'),
        'store/ is the Postgres domain: it knows nothing of Temporal, HTTP or Stripe.',
      ],
      [
        folder('activities', 'workflows', 'client', 'api', 'worker', 'ops', 'config', 'dev'),
        'store/ imports only the vocabulary and its own files.',
      ],
    ],
  ),
  layer(
    ['activities/**/*.ts'],
    [
      [
        pkg('koa', '@koa', 'pg', '@temporalio/client', '@temporalio/worker', '@temporalio/workflow'),
        'activities/ is the thin Temporal adapter over store/ and Stripe: no HTTP, no SQL client, no workflow code.',
        true,
      ],
      [
        folder('workflows', 'client', 'api', 'worker', 'ops', 'config', 'dev'),
        'activities/ imports the store, the vocabulary and Stripe; it never reaches up to workflows, the API or the worker.',
      ],
    ],
  ),
  layer(
    ['client/**/*.ts'],
    [
      [
        pkg('koa', '@koa', 'pg', 'stripe', '@temporalio/worker', '@temporalio/activity'),
        'client/ is the Temporal client side of the sagas.',
        true,
      ],
      [
        folder('activities', 'api', 'worker', 'ops', 'config', 'dev'),
        'client/ imports workflow definitions, the store and the vocabulary only.',
      ],
    ],
  ),
  layer(
    ['api/**/*.ts'],
    [
      [
        pkg('pg', '@temporalio/worker', '@temporalio/activity', '@temporalio/workflow'),
        'api/ is HTTP only: Postgres through store/, sagas through client/.',
        true,
      ],
      [
        folder('activities', 'workflows', 'worker', 'ops', 'dev'),
        'api/ never imports activities, workflows, the worker or the CLIs: routes call store/ and client/.',
      ],
    ],
    noSql,
  ),
  layer(
    ['web/**/*.ts'],
    [
      [
        pkg('koa', '@koa', 'pg', 'stripe', '@temporalio'),
        'web/ renders HTML from the values it is given: no HTTP, no Postgres, no Temporal, no Stripe.',
      ],
      [
        folder('store', 'activities', 'workflows', 'client', 'api', 'worker', 'ops', 'config', 'dev'),
        'web/ imports only the vocabulary and its own files: the routes (api/) read, web/ renders.',
      ],
    ],
  ),
  layer(
    ['worker/**/*.ts'],
    [
      [pkg('koa', '@koa'), 'worker/ serves no HTTP API.'],
      [
        folder('api', 'client', 'ops', 'dev'),
        'worker/ runs activities and workflows; it never imports the API, the client side or the CLIs.',
      ],
    ],
  ),
  layer(
    ['ops/**/*.ts'],
    [
      [
        pkg('koa', '@koa', '@temporalio/worker', '@temporalio/activity', '@temporalio/workflow'),
        'ops/ CLIs talk to the store and to Temporal as a client.',
        true,
      ],
      [pkg('pg'), 'ops/ reaches Postgres through store/ (types are fine).', true],
      [
        folder('api', 'worker', 'activities', 'dev'),
        'ops/ CLIs share store/, client/ and config/ with the services; they never import a service.',
      ],
    ],
    noSql,
  ),
  layer(
    ['drill/**/*.ts'],
    [
      [
        pkg('koa', '@koa', 'pg', '@temporalio/worker', '@temporalio/activity', '@temporalio/workflow'),
        'drill/ is a tool: it drives the service over HTTP and reads Postgres through store/ and Temporal as a client.',
        true,
      ],
      [
        folder('api', 'worker', 'activities', 'workflows', 'client'),
        'drill/ never imports a service: it starts them (dev/) or drills a running one over HTTP.',
      ],
    ],
    noSql,
  ),
  {
    // This file and any other plain JavaScript: no type information to check against.
    files: ['**/*.{js,mjs,cjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
