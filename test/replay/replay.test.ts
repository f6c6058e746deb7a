import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { workflowBundle } from '../helpers/system';

const dir = path.join(__dirname, 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

test('there are recorded histories for every saga branch to replay', (t) => {
  t.true(files.length >= 6, `${files.length} histories in ${dir}`);
});

// A change to the workflow code that would break running sagas (a nondeterminism error) fails here.
for (const file of files) {
  test(`the current workflow code replays the recorded ${file.replace('.json', '')} history`, async (t) => {
    const history = historyFromJSON(JSON.parse(readFileSync(path.join(dir, file), 'utf8')));
    await t.notThrowsAsync(Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file));
  });
}
