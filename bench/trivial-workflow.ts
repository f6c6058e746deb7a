import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<string> }>({ startToCloseTimeout: '10 seconds' });

/** The baseline beside the purchase saga in `npm run bench:saga`: one workflow, one activity. */
export async function oneActivityWorkflow(): Promise<string> {
  return noop();
}
