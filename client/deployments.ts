import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';

// Worker Versioning's two operator steps through the Temporal client (the `temporal worker deployment`
// CLI does the same: docs/deploying.md#deploying-a-new-worker-version). The cluster rehearsal's
// `deploy` fault and the versioning tests roll a new version out with them.

/** How long `setCurrentVersion` waits for the version's workers to be seen polling. */
const VERSION_SEEN_WITHIN_MS = 60_000;

/**
 * Makes `version` the deployment's current one: new sagas start on it, while sagas pinned to an
 * older version finish there. The server knows a version once one of its workers has polled, so a
 * version not found yet is asked again for a while (its workers are still starting).
 */
export async function setCurrentVersion(client: Client, version: WorkerDeploymentVersion): Promise<void> {
  const deadline = Date.now() + VERSION_SEEN_WITHIN_MS;
  for (;;) {
    try {
      await client.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: client.options.namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        identity: client.options.identity,
      });
      return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `version ${version.buildId} of Worker Deployment ${version.deploymentName} was not set current: ${(err as Error).message} (its workers poll ${await queuesOf(client, version)})`,
          { cause: err },
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** The task queues a version's workers poll, as the server knows them (for an error message). */
async function queuesOf(client: Client, version: WorkerDeploymentVersion): Promise<string> {
  try {
    const { versionTaskQueues } = await client.workflowService.describeWorkerDeploymentVersion({
      namespace: client.options.namespace,
      deploymentVersion: version,
    });
    return (versionTaskQueues ?? []).map((q) => `${q.name} (type ${q.type})`).join(', ') || 'no task queue';
  } catch (err) {
    return `unknown: ${(err as Error).message}`;
  }
}

/** The version a purchase saga is pinned to (its build id), or undefined for a run that is not pinned. */
export async function pinnedBuildId(client: Client, workflowId: string): Promise<string | undefined> {
  const { raw } = await client.workflow.getHandle(workflowId).describe();
  const info = raw.workflowExecutionInfo?.versioningInfo;
  if (!info || Number(info.behavior) !== PINNED) return undefined;
  return info.deploymentVersion?.buildId ?? undefined;
}

/** temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED */
const PINNED = 1;

/** The build ids of the workers that completed a run's workflow tasks (its history says which). */
export async function buildIdsThatRan(client: Client, workflowId: string, runId?: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const done = e.workflowTaskCompletedEventAttributes;
    if (done) ids.add(done.deploymentVersion?.buildId ?? '(unversioned)');
  }
  return [...ids];
}
