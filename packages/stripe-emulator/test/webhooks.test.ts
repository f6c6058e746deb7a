import test from 'ava';
import type Stripe from 'stripe';

import {
  type EmulatorEvents,
  NO_RATE_LIMIT,
  WEBHOOK_SECRET,
  pay,
  recordedEvents,
  sessionParams,
  startHarness,
  waitFor,
} from './harness';

test('a delivery answered with 500 is redelivered, re-signed, until it is accepted', async (t) => {
  const harness = await startHarness(t, { retryBaseMs: 40 });
  const { stripe, receiver } = harness;
  receiver.answer = (index) => (index < 2 ? 500 : 200);
  const session = await stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');

  await waitFor('the third attempt to be accepted', () => receiver.accepted().length === 1);
  t.is(receiver.received.length, 3);
  const ids = receiver.received.map((r) => {
    t.is(r.verifyError, null);
    return stripe.webhooks.constructEvent(r.rawBody, r.signature, WEBHOOK_SECRET).id;
  });
  t.is(new Set(ids).size, 1);

  const [record] = await recordedEvents(harness, 1);
  t.is(record.type, 'checkout.session.completed');
  t.true(record.delivered);
  t.deepEqual(
    record.deliveries[0].attempts.map((a) => a.status),
    [500, 500, 200],
  );
  t.is(record.deliveries[0].state, 'delivered');
});

test('redelivery backs off exponentially from retryBaseMs', async (t) => {
  const harness = await startHarness(t, { retryBaseMs: 60 });
  harness.receiver.answer = (index) => (index < 3 ? 503 : 200);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');
  await waitFor('the fourth attempt', () => harness.receiver.accepted().length === 1);

  const [record] = await recordedEvents(harness, 1);
  const times = record.deliveries[0].attempts.map((a) => Date.parse(a.at));
  const gaps = times.slice(1).map((time, i) => time - times[i]);
  // 60, 120, 240 ms, each measured from the start of the previous attempt.
  t.true(gaps[0] >= 55, `gaps ${gaps.join(', ')}`);
  t.true(gaps[1] >= 115, `gaps ${gaps.join(', ')}`);
  t.true(gaps[2] >= 235, `gaps ${gaps.join(', ')}`);
});

test('a delivery that never succeeds gives up after the attempt limit', async (t) => {
  const harness = await startHarness(t, { retryBaseMs: 10, maxDeliveryAttempts: 3 });
  harness.receiver.answer = () => 500;
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await harness.stripe.checkout.sessions.expire(session.id);

  const record = await waitFor('the delivery to fail', async () => {
    const events = await harness.control<EmulatorEvents>('GET', '/_emulator/events');
    const [first] = events.body.data;
    return first?.deliveries[0]?.state === 'failed' && first;
  });
  t.is(record.deliveries[0].attempts.length, 3);
  t.is(harness.receiver.received.length, 3);
  t.false(record.delivered);
});

test('a network error counts as a failed attempt and is retried', async (t) => {
  const harness = await startHarness(t, { retryBaseMs: 30, connectWebhooks: false });
  harness.emulator.setWebhookUrl('http://127.0.0.1:9/nobody-listens');
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await harness.stripe.checkout.sessions.expire(session.id);
  const record = await waitFor('a failed attempt', async () => {
    const events = await harness.control<EmulatorEvents>('GET', '/_emulator/events');
    const [first] = events.body.data;
    return first?.deliveries[0]?.attempts.length >= 1 && first;
  });
  t.is(record.deliveries[0].attempts[0].status, null);
  t.truthy(record.deliveries[0].attempts[0].error);

  harness.emulator.setWebhookUrl(harness.receiver.url);
  await waitFor('the retry to reach the receiver', () => harness.receiver.accepted().length === 1);
  t.pass();
});

test('duplicate delivers each event that many times', async (t) => {
  const harness = await startHarness(t);
  const configured = await harness.control<{ duplicate: number }>('POST', '/_emulator/webhooks', { duplicate: 3 });
  t.is(configured.body.duplicate, 3);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'succeeded');

  await waitFor('three deliveries', () => harness.receiver.accepted().length === 3);
  const ids = harness.receiver.accepted().map((event) => event.id);
  t.is(new Set(ids).size, 1);
  const [record] = await recordedEvents(harness, 1);
  t.deepEqual(
    record.deliveries.map((d) => [d.copy, d.state]),
    [
      [1, 'delivered'],
      [2, 'delivered'],
      [3, 'delivered'],
    ],
  );
});

test('paused deliveries are held and released when unpaused', async (t) => {
  const harness = await startHarness(t);
  const { stripe, receiver, control } = harness;
  await control('POST', '/_emulator/webhooks', { pause: true });
  const sessions: Stripe.Checkout.Session[] = [];
  for (let i = 0; i < 3; i += 1) {
    const session = await stripe.checkout.sessions.create(sessionParams());
    await stripe.checkout.sessions.expire(session.id);
    sessions.push(session);
  }
  const held = await control<{ queued: number; paused: boolean }>('GET', '/_emulator/webhooks');
  t.is(held.body.queued, 3);
  t.true(held.body.paused);
  t.is(receiver.received.length, 0);

  await control('POST', '/_emulator/webhooks', { pause: false });
  await waitFor('the held events', () => receiver.accepted().length === 3);
  t.deepEqual(
    receiver.accepted().map((e) => (e.data.object as Stripe.Checkout.Session).id),
    sessions.map((s) => s.id),
  );
});

test('with shuffle on, held deliveries are released out of order', async (t) => {
  const harness = await startHarness(t, NO_RATE_LIMIT);
  const { stripe, receiver, control } = harness;
  await control('POST', '/_emulator/webhooks', { pause: true, shuffle: true });
  const expiredIds: string[] = [];
  for (let i = 0; i < 20; i += 1) {
    const session = await stripe.checkout.sessions.create(sessionParams());
    await stripe.checkout.sessions.expire(session.id);
    expiredIds.push(session.id);
  }
  await waitFor('all twenty to be queued', async () => {
    const settings = await control<{ queued: number }>('GET', '/_emulator/webhooks');
    return settings.body.queued === 20;
  });

  await control('POST', '/_emulator/webhooks', { pause: false });
  await waitFor('all twenty deliveries', () => receiver.accepted().length === 20);
  const arrived = receiver.accepted().map((e) => (e.data.object as Stripe.Checkout.Session).id);
  t.deepEqual([...arrived].sort(), [...expiredIds].sort());
  t.notDeepEqual(arrived, expiredIds);
});

test('a reset forgets objects, events and settings', async (t) => {
  const harness = await startHarness(t);
  await harness.control('POST', '/_emulator/webhooks', { duplicate: 2 });
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  t.is((await harness.control('POST', '/_emulator/reset')).status, 200);
  await t.throwsAsync(harness.stripe.checkout.sessions.retrieve(session.id));
  const events = await harness.control<EmulatorEvents>('GET', '/_emulator/events');
  t.deepEqual(events.body.data, []);
  const settings = await harness.control<{ duplicate: number }>('GET', '/_emulator/webhooks');
  t.is(settings.body.duplicate, 1);
});

test('parallel sends that many deliveries at once; one at a time by default', async (t) => {
  const harness = await startHarness(t, NO_RATE_LIMIT);
  const { stripe, receiver, control } = harness;
  let open = (): void => {};
  receiver.gate = new Promise<void>((resolve) => (open = resolve));
  const expireFive = async () => {
    for (let i = 0; i < 5; i += 1)
      await stripe.checkout.sessions.expire((await stripe.checkout.sessions.create(sessionParams())).id);
  };
  await expireFive();
  await waitFor('the first delivery to reach the receiver', () => receiver.waiting === 1);
  const serial = await control<{ parallel: number; in_flight_count: number; queued: number }>(
    'GET',
    '/_emulator/webhooks',
  );
  t.deepEqual([serial.body.parallel, serial.body.in_flight_count, serial.body.queued], [1, 1, 4]);

  const configured = await control<{ parallel: number }>('POST', '/_emulator/webhooks', { parallel: 3 });
  t.is(configured.body.parallel, 3);
  await waitFor('three deliveries in flight at once', () => receiver.waiting === 3);
  const wide = await control<{ in_flight_count: number; queued: number }>('GET', '/_emulator/webhooks');
  t.deepEqual([wide.body.in_flight_count, wide.body.queued], [3, 2]);

  open();
  receiver.gate = null;
  await waitFor('every event accepted', () => receiver.accepted().length === 5);
  const refused = await control('POST', '/_emulator/webhooks', { parallel: 0 });
  t.is(refused.status, 400);
});
