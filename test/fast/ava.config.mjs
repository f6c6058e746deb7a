import fs from 'node:fs';

// The fast tier (`npm run test:fast`, and the first half of `npm test`): pure functions, and every
// workflow against a local Temporal with mocked activities. No Postgres, no emulator, no browser.
//
// The tier is bound by CPU on two cores: every file is a process that loads its imports through tsx.
// The files are CommonJS (the project is: no "type": "module"), so they are required with tsx's
// require hook alone (`tsx/cjs`): its ESM loader sends every import of every process through a
// loader thread, which cost some 40% of the tier's CPU. The replay and the workflow files go first,
// the longest first: they spend half their time waiting on the workflows' short timers, and the pure
// files, short and all CPU, fill those waits. Four files at once keeps both cores busy through them.

const texts = new Map();
/** 0 for the replay of every recorded history (one long file), 1 for a file of workflow tests, else 2. */
function rank(file) {
  if (!texts.has(file)) texts.set(file, fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
  const text = texts.get(file);
  return /runReplayHistories\(/.test(text) ? 0 : /useFastTemporal\(/.test(text) ? 1 : 2;
}

export default {
  files: ['test/fast/**/*.test.ts'],
  extensions: ['ts'],
  nodeArguments: ['--require=tsx/cjs'],
  timeout: '1m',
  workerThreads: false,
  concurrency: 4,
  /** The replay, then the workflow files, the longest (by size, a fair guess of time) first; then the rest by name. */
  sortTestFiles: (a, b) =>
    rank(a) - rank(b) ||
    (rank(a) === 1 ? texts.get(b).length - texts.get(a).length : 0) ||
    a.localeCompare(b, [], { numeric: true }),
};
