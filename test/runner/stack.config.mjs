// The stack tier's ava configuration (test/runner/stack.ts): the compiled test files of this run's
// tree (`TEST_TREE`, test/runner/compile.ts), with source maps for stack traces. A test file runs
// through `npm test -- <file>`, which compiles the tree first.
import process from 'node:process';

const tree = process.env.TEST_TREE;
if (!tree) throw new Error('TEST_TREE is not set: run the stack tier with `npm test`');

export default {
  files: [`${tree}/test/**/*.test.js`, `${tree}/packages/*/test/**/*.test.js`, `!${tree}/test/fast/**`],
  nodeArguments: ['--enable-source-maps'],
  timeout: '3m',
  workerThreads: false,
};
