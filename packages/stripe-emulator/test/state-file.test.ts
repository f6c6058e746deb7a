import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import type Stripe from 'stripe';

import { startEmulator } from '../src/index';
import type { PersistedState } from '../src/persist';
import {
  type EmulatorEvents,
  WEBHOOK_SECRET,
  acceptedTypes,
  pay,
  paidIntent,
  recordedEvents,
  sessionParams,
  startHarness,
  tempStateFile,
  waitFor,
} from './harness';

/** The state file as the emulator wrote it. */
const readSaved = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as PersistedState;

test('a session created before a restart is retrieved and paid after it, on the same state file', async (t) => {
  const stateFile = tempStateFile(t);
  const first = await startHarness(t, { stateFile });
  const created = await first.stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'open-p_1' });
  await first.emulator.close();

  const second = await startHarness(t, { stateFile });
  t.not(second.emulator.port, first.emulator.port);
  const session = await second.stripe.checkout.sessions.retrieve(created.id, { expand: ['line_items'] });
  t.is(session.status, 'open');
  t.is(session.amount_total, 3000);
  t.deepEqual(session.metadata, { purchase_id: 'p_1' });
  t.is(session.expires_at, created.expires_at);
  t.is(session.line_items?.data[0].description, 'Limited sneaker');
  // The buyer is sent to the emulator that now holds the session.
  t.is(session.url, `${second.emulator.url}/checkout/${created.id}`);

  // The idempotency record came along: a retry of the create answers the same session.
  const replayed = await second.stripe.checkout.sessions.create(sessionParams({ expires_at: created.expires_at }), {
    idempotencyKey: 'open-p_1',
  });
  t.is(replayed.id, created.id);
  t.is(replayed.lastResponse.headers['idempotent-replayed'], 'true');

  const paid = await pay(second, created.id, 'succeeded');
  t.is(paid.status, 200);
  t.is(paid.session.payment_status, 'paid');
  t.deepEqual(await acceptedTypes(second, 1), ['checkout.session.completed']);
  const intent = await second.stripe.paymentIntents.retrieve(paid.session.payment_intent as string);
  t.deepEqual(intent.metadata, { purchase_id: 'p_1' });
});

test('payment intents, charges, refunds, disputes and events are all still there after a restart', async (t) => {
  const stateFile = tempStateFile(t);
  const first = await startHarness(t, { stateFile });
  const intentId = await paidIntent(first, 'succeeded', { card: { fingerprint: 'fpRestart1' } });
  const refund = await first.stripe.refunds.create({ payment_intent: intentId, amount: 500 });
  const declinedIntent = await paidIntent(first, 'declined');
  const disputed = await paidIntent(first);
  const dispute = (await first.control<Stripe.Dispute>('POST', `/_emulator/payment_intents/${disputed}/dispute`)).body;
  await acceptedTypes(first, 7);
  const eventsBefore = await recordedEvents(first, 7);
  await first.emulator.close();

  const second = await startHarness(t, { stateFile });
  const intent = await second.stripe.paymentIntents.retrieve(intentId, { expand: ['latest_charge'] });
  t.is(intent.status, 'succeeded');
  const charge = intent.latest_charge as Stripe.Charge;
  t.is(charge.amount_refunded, 500);
  t.is(charge.payment_method_details?.card?.fingerprint, 'fpRestart1');
  t.is((await second.stripe.refunds.retrieve(refund.id)).amount, 500);
  t.is((await second.stripe.paymentIntents.retrieve(declinedIntent)).last_payment_error?.code, 'card_declined');
  t.is((await second.stripe.disputes.retrieve(dispute.id)).status, 'needs_response');

  const eventsAfter = (await second.control<EmulatorEvents>('GET', '/_emulator/events')).body.data;
  t.deepEqual(
    eventsAfter.map((e) => [e.id, e.type, e.delivered]),
    eventsBefore.map((e) => [e.id, e.type, true]),
  );
  const listed = await second.stripe.events.list({ limit: 100 });
  t.deepEqual(
    listed.data.map((e) => e.id).reverse(),
    eventsBefore.map((e) => e.id),
  );
  // Nothing delivered before the restart is delivered again.
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.is(second.receiver.received.length, 0);

  // The refund rules still hold on the restored charge: 2500 remain, not 3000.
  const rest = await second.stripe.refunds.create({ payment_intent: intentId });
  t.is(rest.amount, 2500);
});

test('webhook deliveries still pending when the emulator stops are delivered after the restart', async (t) => {
  const stateFile = tempStateFile(t);
  // No webhook URL: events wait, as when the service is down.
  const first = await startHarness(t, { stateFile, connectWebhooks: false });
  const session = await first.stripe.checkout.sessions.create(sessionParams());
  await pay(first, session.id, 'succeeded');
  const expired = await first.stripe.checkout.sessions.create(sessionParams());
  await first.stripe.checkout.sessions.expire(expired.id);
  const waiting = (await first.control<EmulatorEvents>('GET', '/_emulator/events')).body.data;
  t.deepEqual(
    waiting.map((e) => e.deliveries[0].state),
    ['pending', 'pending'],
  );
  await first.emulator.close();

  const second = await startHarness(t, { stateFile });
  const types = await acceptedTypes(second, 2);
  t.deepEqual(types, ['checkout.session.completed', 'checkout.session.expired']);
  const delivered = second.receiver.accepted();
  t.deepEqual(
    delivered.map((e) => e.id),
    waiting.map((e) => e.id),
  );
  for (const received of second.receiver.received) t.is(received.verifyError, null);
  const record = await waitFor('the deliveries to be recorded', async () => {
    const events = (await second.control<EmulatorEvents>('GET', '/_emulator/events')).body.data;
    return events.every((e) => e.delivered) && events;
  });
  t.is(record.length, 2);
});

test('a delivery being retried when the emulator stops keeps its attempts and is retried after the restart', async (t) => {
  const stateFile = tempStateFile(t);
  const first = await startHarness(t, { stateFile, retryBaseMs: 60_000 });
  first.receiver.answer = () => 503;
  const session = await first.stripe.checkout.sessions.create(sessionParams());
  await first.stripe.checkout.sessions.expire(session.id);
  await recordedEvents(first, 1);
  await first.emulator.close();

  // The retry was due in a minute; the next emulator keeps that time, so shorten it by editing the file.
  const saved = readSaved(stateFile);
  t.is(saved.deliveries[0].state, 'retrying');
  t.is(saved.deliveries[0].attempts.length, 1);
  saved.deliveries[0].next_attempt_at = Date.now();
  fs.writeFileSync(stateFile, JSON.stringify(saved));

  const second = await startHarness(t, { stateFile });
  await acceptedTypes(second, 1);
  const [record] = await recordedEvents(second, 1);
  t.deepEqual(
    record.deliveries[0].attempts.map((a) => a.status),
    [503, 200],
  );
});

test('the state file is rewritten shortly after a change, through a temporary file renamed over it', async (t) => {
  const stateFile = tempStateFile(t);
  const harness = await startHarness(t, { stateFile, stateWriteDelayMs: 20 });
  t.is(harness.emulator.stateFile, stateFile);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  // Without closing the emulator (as if it were killed a moment later), the session is on disk.
  const saved = await waitFor('the session in the state file', () => {
    if (!fs.existsSync(stateFile)) return false;
    const text = fs.readFileSync(stateFile, 'utf8');
    return text.includes(session.id) && (JSON.parse(text) as PersistedState);
  });
  t.is(saved.format, 'stripe-emulator-state');
  t.is(saved.version, 1);
  t.deepEqual(
    saved.account.sessions.map((s) => s.id),
    [session.id],
  );
  t.deepEqual(fs.readdirSync(path.dirname(stateFile)), [path.basename(stateFile)]);

  await harness.stripe.checkout.sessions.expire(session.id);
  await waitFor('the expiry in the state file', () =>
    readSaved(stateFile).account.events.some((e) => e.type === 'checkout.session.expired'),
  );
  // The webhook's delivery may be written a moment later: its temporary file is renamed over the state file.
  await waitFor('no temporary file left', () =>
    fs.readdirSync(path.dirname(stateFile)).every((f) => f === path.basename(stateFile)),
  );
});

test('a reset empties the state file as well', async (t) => {
  const stateFile = tempStateFile(t);
  const first = await startHarness(t, { stateFile });
  const session = await first.stripe.checkout.sessions.create(sessionParams());
  await first.control('POST', '/_emulator/reset');
  await first.emulator.close();
  const second = await startHarness(t, { stateFile });
  await t.throwsAsync(second.stripe.checkout.sessions.retrieve(session.id), { message: /No such checkout.session/ });
});

test('a state file that is not the emulator’s stops it from starting and is left as it was', async (t) => {
  const stateFile = tempStateFile(t);
  fs.writeFileSync(stateFile, '{"sessions": [');
  await t.throwsAsync(startEmulator({ port: 0, webhookSecret: WEBHOOK_SECRET, stateFile }), {
    message: /not valid JSON; move it away/,
  });
  fs.writeFileSync(stateFile, '{"hello": "world"}');
  await t.throwsAsync(startEmulator({ port: 0, webhookSecret: WEBHOOK_SECRET, stateFile }), {
    message: /is not a version 1 payments emulator state file/,
  });
  t.is(fs.readFileSync(stateFile, 'utf8'), '{"hello": "world"}');
});
