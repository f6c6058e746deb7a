import fs from 'node:fs';
import process from 'node:process';

// The fast tier (`npm run test:fast`, and the first half of `npm test`): pure functions, and every
// workflow against a local Temporal with mocked activities. No Postgres, no emulator, no browser.
//
// The tier is bound by CPU on two cores: every file is a process that loads its imports. They run
// compiled, from this run's tree (`TEST_TREE`, test/runner/compile.ts): through tsx's require hook
// (`tsx/cjs`) each process spent about 0.4 CPU-s more, and through its ESM loader (a loader thread
// for every import) some 40% of the tier's CPU more. The two replay files go first, side by side,
// then the workflow files, the longest first: they spend half their time waiting on the workflows'
// short timers, and the pure files, short and all CPU, fill those waits. Four files at once keeps
// both cores busy through them.

const tree = process.env.TEST_TREE;
if (!tree) throw new Error('TEST_TREE is not set: run the fast tier with `npm run test:fast`');

const texts = new Map();
/** 0 for the replay of the recorded histories (two long files), 1 for a file of workflow tests, else 2. */
function rank(file) {
  if (!texts.has(file)) texts.set(file, fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
  const text = texts.get(file);
  return /replayGenerations\(/.test(text) ? 0 : /useFastTemporal\(/.test(text) ? 1 : 2;
}

export default {
  files: [`${tree}/test/fast/**/*.test.js`],
  nodeArguments: ['--enable-source-maps'],
  timeout: '1m',
  workerThreads: false,
  concurrency: 4,
  /** The replay, then the workflow files, the longest (by size, a fair guess of time) first; then the rest by name. */
  sortTestFiles: (a, b) =>
    rank(a) - rank(b) ||
    (rank(a) === 1 ? texts.get(b).length - texts.get(a).length : 0) ||
    a.localeCompare(b, [], { numeric: true }),
};
