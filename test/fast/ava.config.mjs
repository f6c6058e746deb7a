// The fast tier (`npm run test:fast`, and the first half of `npm test`): pure functions, and every
// workflow against a local Temporal with mocked activities. No Postgres, no emulator, no browser.
// Three files at once: the workflow files mostly wait on their short timers.
export default {
  files: ['test/fast/**/*.test.ts'],
  extensions: { ts: 'module' },
  nodeArguments: ['--import=tsx'],
  timeout: '1m',
  workerThreads: false,
  concurrency: 3,
};
