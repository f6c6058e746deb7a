import test from 'ava';
import { purchaseWorkflow } from '../../../workflows';
import { paymentEventSignal } from '../../../workflows/definitions';
import { useFastTemporal } from '../helpers/temporal';

const temporal = useFastTemporal(test);

test('paid in time: confirmed', async (t) => {
  const { env, world, taskQueue } = temporal();
  const c = world.open();
  const h = await env.client.workflow.start(purchaseWorkflow, { taskQueue, workflowId: `purchase-${c.id}`, args: [c.input()] });
  for (;;) { if (c.record?.sessionId) break; await new Promise((r) => setTimeout(r, 20)); }
  await h.signal(paymentEventSignal, c.event('checkout.session.completed', { paymentStatus: 'paid' }));
  const state = await h.result();
  t.is(state.status, 'confirmed');
  t.deepEqual(c.names(), ['takeHold', 'openCheckout', 'convertHold']);
});
