import { randomUUID } from 'node:crypto';
import test from 'ava';
import { buildIdsThatRan, pinnedBuildId, setCurrentVersion } from '../../client/deployments';
import { purchaseWorkflowId } from '../../vocabulary';
import { sessionOf, startSystem } from '../helpers/system';

// Worker Versioning (WORKER_DEPLOYMENT_NAME, WORKER_BUILD_ID) against the Temporal dev server: a
// deploy sets a new version current while sagas of the old one are open. A purchase saga is pinned:
// it finishes on the workers of the version it started on, whatever is current; new sagas start on
// the current version; once the old version's workers are gone, the new one carries on alone.

test('a saga finishes on the version it started on; sagas after the deploy run on the new one', async (t) => {
  const sys = await startSystem({ worker: false });
  const deploymentName = `checkout-${randomUUID()}`;
  const a = { deploymentName, buildId: 'build-a' };
  const b = { deploymentName, buildId: 'build-b' };
  try {
    const workerA = await sys.startWorker({ deployment: a });
    await setCurrentVersion(sys.temporal, a);
    const sku = await sys.createProduct({ stock: 2 });
    const before = await sys.buy(sku, 'before-the-deploy');
    t.is(before.status, 201);
    const beforeId = purchaseWorkflowId(before.body.purchaseId);
    t.is(await pinnedBuildId(sys.temporal, beforeId), 'build-a');

    // The deploy: version b's workers start, b becomes current; a's keep running to drain.
    await sys.startWorker({ deployment: b });
    await setCurrentVersion(sys.temporal, b);
    const after = await sys.buy(sku, 'after-the-deploy');
    t.is(after.status, 201);
    const afterId = purchaseWorkflowId(after.body.purchaseId);
    t.is(await pinnedBuildId(sys.temporal, afterId), 'build-b');

    // The old saga's payment is settled by version a, though b is current.
    t.is((await sys.pay(await sessionOf(sys.db, before.body.purchaseId), 'succeeded')).status, 200);
    t.is((await sys.waitForPurchase(before.body.purchaseId, (p) => p.status === 'confirmed')).status, 'confirmed');
    await sys.temporal.workflow.getHandle(beforeId).result();
    t.deepEqual(await buildIdsThatRan(sys.temporal, beforeId), ['build-a']);

    // Version a retired: the new saga needs none of its workers.
    await workerA.stop();
    t.is((await sys.pay(await sessionOf(sys.db, after.body.purchaseId), 'succeeded')).status, 200);
    t.is((await sys.waitForPurchase(after.body.purchaseId, (p) => p.status === 'confirmed')).status, 'confirmed');
    await sys.temporal.workflow.getHandle(afterId).result();
    t.deepEqual(await buildIdsThatRan(sys.temporal, afterId), ['build-b']);
  } finally {
    await sys.close();
  }
});
