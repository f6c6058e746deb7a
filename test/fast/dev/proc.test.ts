import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { spawnChild } from '../../../dev/proc';

test('a child with a log file hands its lines over as the file grows, and never waits for its parent to read them', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'proc-follow-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const logFile = path.join(dir, 'writer.log');
  const done = path.join(dir, 'done');
  fs.writeFileSync(logFile, 'a line of an earlier run\n');
  // About 2 MB: a pipe holds 64 KiB, so a child writing to one would wait for this process to read.
  const count = 20_000;
  const line = (i: number) => `line ${i} ${'x'.repeat(90)}`;
  const lines: string[] = [];
  const child = spawnChild({
    name: 'writer',
    command: process.execPath,
    args: [
      '-e',
      `const fs = require('node:fs');
       for (let i = 0; i < ${count}; i++) fs.writeSync(1, 'line ' + i + ' ' + 'x'.repeat(90) + '\\n');
       fs.writeFileSync(${JSON.stringify(done)}, '');`,
    ],
    logFile,
    onLine: (l) => lines.push(l),
    deathSignal: 'SIGTERM',
    stopSteps: [['SIGTERM', 1000]],
  });
  // This process takes no turn of its event loop (so reads nothing) until the child has written everything.
  const until = Date.now() + 15_000;
  while (!fs.existsSync(done) && Date.now() < until) {
    // busy
  }
  t.true(fs.existsSync(done), 'the child wrote every line while its parent read none');
  t.is((await child.exited).code, 0);
  t.is(lines.length, count, 'every line the child wrote, and none from before it started');
  t.is(lines[0], line(0));
  t.is(lines.at(-1), line(count - 1));
  t.true(child.output().endsWith(line(count - 1)));
});
