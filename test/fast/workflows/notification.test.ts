import test from 'ava';
import { ApplicationFailure } from '@temporalio/activity';
import { notificationTaskQueue } from '../../../vocabulary';
import { notificationWorkflow } from '../../../workflows';
import type { Delivery } from '../helpers/notification-world';
import { useFastTemporal } from '../helpers/temporal';
import { gate } from '../helpers/wait';

// One delivery of a buyer notification (workflows/notification.ts): the delivery activity's retry
// policy is the backoff, the attempts cap and the age limit; whatever ends the retries, the delivery
// is marked dead with why. Fakes: test/fast/helpers/notification-world.ts (3 attempts; 1.5 s of age
// for email, no age limit for the others).

const temporal = useFastTemporal(test, { notifications: true });

function deliver(d: Delivery) {
  const { env, taskQueue } = temporal();
  return env.client.workflow.execute(notificationWorkflow, {
    taskQueue: notificationTaskQueue(taskQueue),
    workflowId: `notify-${d.notificationId}`,
    args: [d.input()],
  });
}

test('delivered at the first attempt: nothing marked dead', async (t) => {
  const d = temporal().notifications.open(() => {});
  t.is(await deliver(d), 'delivered');
  t.deepEqual(d.attempts, [1]);
  t.is(d.dead, undefined);
});

test('a failure is retried, and a later attempt delivers', async (t) => {
  const d = temporal().notifications.open((n) => {
    if (n < 3) throw ApplicationFailure.retryable(`the webhook answered 503 (attempt ${n})`);
  });
  t.is(await deliver(d), 'delivered');
  t.deepEqual(d.attempts, [1, 2, 3]);
});

test('a refusal for good is not retried: dead at once with the refusal', async (t) => {
  const d = temporal().notifications.open(() => {
    throw ApplicationFailure.nonRetryable('the webhook answered 410', 'PermanentFailure');
  });
  t.is(await deliver(d), 'dead');
  t.deepEqual(d.attempts, [1]);
  t.is(d.dead, 'the webhook answered 410');
});

test('out of attempts: dead with the last failure', async (t) => {
  const d = temporal().notifications.open((n) => {
    throw ApplicationFailure.retryable(`the webhook answered 500 (attempt ${n})`);
  });
  t.is(await deliver(d), 'dead');
  t.deepEqual(d.attempts, [1, 2, 3]);
  t.is(d.dead, 'the webhook answered 500 (attempt 3)');
});

test('too old to retry: an attempt still running when the age limit passes ends the delivery dead', async (t) => {
  // The attempt answers only once the test is over: still running when the 1.5 s age limit passes.
  const held = gate(t);
  const d = temporal().notifications.open(() => held.passed().then(() => undefined), 'email');
  t.is(await deliver(d), 'dead');
  t.is(d.dead, 'too old to retry (NOTIFY_MAX_AGE_MS)');
});

test('out of attempts, the last outlasting its deadline: dead saying so, not "too old"', async (t) => {
  // Each attempt answers only once the test is over: past its 300 ms however late the server's timer
  // fires (an attempt of 1 s was delivered once, on a loaded machine).
  const held = gate(t);
  const d = temporal().notifications.open(() => held.passed().then(() => undefined), 'log');
  t.is(await deliver(d), 'dead');
  t.deepEqual(d.attempts, [1, 2]);
  t.is(d.dead, 'the last attempt outlasted NOTIFY_TIMEOUT_MS (no answer in time)');
});
