import type { ExecutionContext } from 'ava';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { recordedHistories, recordedHistoryFiles } from '../../replay/paths';
import { workflowSpanSinks } from '../../../worker/tracing';
import { bundleFastWorkflows, FastCoverage } from './bundle';

// The replay of recorded histories (test/fast/replay/): every generation is replayed by one of two
// test files, half each, so the two run side by side on two cores (one file took 24 s with eight
// generations, the longest of the fast tier). The fast tier's ava config starts them first.

Runtime.install({ logger: new DefaultLogger('ERROR') });

/** Every generation's folder name, oldest first. */
export function generations(files = recordedHistoryFiles()): string[] {
  // Numeric collation puts 1.9.0 before 1.10.0.
  return [...new Set(files.map((h) => h.split('/')[0]))].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/**
 * Replays with the current workflow code every recorded history of the generations whose place in
 * the order (0 for the oldest) `keep` takes; fails naming each history that does not replay.
 */
export async function replayGenerations(t: ExecutionContext, keep: (place: number) => boolean): Promise<void> {
  t.timeout(50_000);
  const all = recordedHistoryFiles();
  const kept = new Set(generations(all).filter((_, i) => keep(i)));
  const histories = all.filter((h) => kept.has(h.split('/')[0]));
  t.true(histories.length > 0, 'no history to replay');
  const coverage = new FastCoverage();
  const prebuilt = process.env.FAST_WORKFLOW_BUNDLE_PATH;
  const workflowBundle = prebuilt ? { codePath: prebuilt } : { code: await bundleFastWorkflows() };
  const replayed = Worker.runReplayHistories(
    // Counted during replay too (a sink's calls are skipped in replay unless it asks for them).
    { workflowBundle, sinks: { ...coverage.sinks(true), ...workflowSpanSinks() } },
    recordedHistories(histories),
  );
  const failed: string[] = [];
  let count = 0;
  for await (const result of replayed) {
    count++;
    if (result.error) failed.push(`${result.workflowId}: ${result.error.message}`);
  }
  t.is(count, histories.length);
  t.deepEqual(failed, []);
  coverage.write();
}
