import test from 'ava';
import type { WorkflowHandle } from '@temporalio/client';
import { purchaseWorkflowId } from '../../vocabulary';
import { FAST_RETRIES } from '../helpers/notifications';
import { until } from '../helpers/poll';
import { sessionOf, startSystem, type System } from '../helpers/system';

// The confirmation notice against the whole system (issue 32): a buyer whose purchase is confirmed is
// told so once, by the channels the worker delivers buyer notices by (here the log, as `npm start`
// runs), with the order, its amount, when it was confirmed, where it ships and the receipt's address.
// Each webhook is delivered three times, and the first hand-over of the notice to its delivery
// workflow fails (a trigger refuses it), so the saga's step is retried after its notice was written.

let sys: System;
test.before(async () => {
  sys = await startSystem({ ownDatabase: true, notify: { ...FAST_RETRIES, NOTIFY_LOG: '1' } });
});
test.after.always(async () => {
  await sys?.close();
});

/** Refuses the first `times` hand-overs (markDispatched) of `buyer`'s confirmation notices; counts every try. */
async function refuseHandOvers(buyer: string, times: number): Promise<() => Promise<number>> {
  const seq = `handovers_${buyer.replace(/\W/g, '_')}`;
  await sys.db.query(`CREATE SEQUENCE ${seq}`);
  // A sequence, not a table: its count survives the refused statement's rollback.
  await sys.db.query(`
    CREATE FUNCTION refuse_${seq}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM notifications n
                  WHERE n.id = NEW.notification_id AND n.kind = 'confirmed' AND n.buyer_id = '${buyer}')
         AND nextval('${seq}') <= ${times} THEN
        RAISE EXCEPTION 'hand-over refused by the test';
      END IF;
      RETURN NEW;
    END $$`);
  await sys.db.query(`CREATE TRIGGER refuse_${seq} BEFORE UPDATE OF dispatched_at ON notification_deliveries
                        FOR EACH ROW EXECUTE FUNCTION refuse_${seq}()`);
  return async () =>
    Number((await sys.db.query(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM ${seq}`)).rows[0].n);
}

/** The attempt that completed activity `name` of the saga's history (1: never retried). */
async function attemptsOf(handle: WorkflowHandle, name: string): Promise<number> {
  const { events } = await handle.fetchHistory();
  const scheduled = events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === name);
  if (!scheduled) throw new Error(`the saga never scheduled ${name}`);
  const started = events!.find(
    (e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(scheduled.eventId),
  );
  return started?.activityTaskStartedEventAttributes?.attempt ?? 0;
}

test('a confirmed buyer is told once, with the order, when and where it ships, through duplicate webhooks and retried steps', async (t) => {
  const buyer = 'notice-ann';
  const tries = await refuseHandOvers(buyer, 1);
  t.is((await sys.emulatorCall('POST', '/_emulator/webhooks', { duplicate: 3 })).status, 200);
  const sku = await sys.createProduct({
    name: 'Notice hoodie',
    priceCents: 8900,
    currency: 'eur',
    shippingCountries: ['FR'],
  });
  const bought = await sys.buy(sku, buyer);
  t.is(bought.status, 201, JSON.stringify(bought.body));
  const { purchaseId } = bought.body;
  // Stripe would refuse any read of this session: the address must come from the session's own event.
  const sessionId = await sessionOf(sys.db, purchaseId);
  const path = `/v1/checkout/sessions/${sessionId}`;
  const armed = await sys.emulatorCall('POST', '/_emulator/faults', { path, method: 'GET', status: 400, count: 100 });
  t.is(armed.status, 201, JSON.stringify(armed.body));
  t.teardown(() => sys.emulatorCall('DELETE', '/_emulator/faults'));
  const paid = await sys.pay(sessionId, 'succeeded', {
    shipping: {
      name: 'Ann Martin',
      address: { line1: '12 Rue de la Paix', city: 'Paris', postal_code: '75002', country: 'FR' },
    },
  });
  t.is(paid.status, 200, JSON.stringify(paid.body));
  const handle = sys.temporal.workflow.getHandle(purchaseWorkflowId(purchaseId));
  t.is((await handle.result()).status, 'confirmed');
  t.true((await tries()) >= 1, 'the first hand-over was refused');
  const { body: faults } = await sys.emulatorCall('GET', '/_emulator/faults');
  t.is(
    (faults.data as { path: string; hits: number }[]).find((f) => f.path === path)?.hits,
    0,
    'no call of the Stripe budget read the session again: its webhook brought the address',
  );
  t.true((await attemptsOf(handle, 'notifyConfirmed')) >= 2, 'the step was tried again after its notice was written');

  const row = await until('the notice is sent', async () => {
    const { rows } = await sys.db.query('SELECT * FROM notifications WHERE purchase_id = $1', [purchaseId]);
    return rows[0]?.sent_at ? rows : undefined;
  });
  t.is(row.length, 1, 'one notice for the purchase');
  t.is(row[0].kind, 'confirmed');
  const { rows: deliveries } = await sys.db.query(
    'SELECT channel, attempts FROM notification_deliveries WHERE notification_id = $1',
    [row[0].id],
  );
  t.deepEqual(deliveries, [{ channel: 'log', attempts: 1 }], 'delivered once on its channel');
  const lines = sys.notificationLines().filter((l) => l.includes(purchaseId));
  t.is(lines.length, 1, lines.join('\n'));

  const { rows: record } = await sys.db.query('SELECT confirmed_at FROM purchases WHERE purchase_id = $1', [
    purchaseId,
  ]);
  const at = record[0].confirmed_at as Date;
  const message = row[0].message as string;
  t.true(message.startsWith('Your purchase is confirmed: 1 × Notice hoodie, €89.00, paid on '), message);
  t.true(message.includes(`${at.toISOString().slice(11, 16)} UTC`), `${message} says when: ${at.toISOString()}`);
  t.true(message.includes('It ships to Ann Martin, 12 Rue de la Paix, 75002 Paris, FR.'), message);
  t.true(message.endsWith(`/purchases/${purchaseId}`), message);
  // The JSON API says the same (GET /v1/purchases/:id's confirmedAt and shipping).
  const got = await sys.purchase(purchaseId);
  t.like(got.body, {
    status: 'confirmed',
    confirmedAt: at.toISOString(),
    shipping: {
      name: 'Ann Martin',
      address: {
        line1: '12 Rue de la Paix',
        line2: null,
        city: 'Paris',
        postalCode: '75002',
        state: null,
        country: 'FR',
      },
    },
  });

  // The completed session's event was delivered three times, all answered 200 by the API.
  const copies = await until('the three copies of the event delivered', async () => {
    const { body } = await sys.emulatorCall('GET', '/_emulator/events?type=checkout.session.completed');
    const event = (body.data as { object_id: string; deliveries: { state: string }[] }[]).find(
      (e) => e.object_id === sessionId,
    );
    const delivered = event?.deliveries.filter((d) => d.state === 'delivered').length ?? 0;
    return delivered >= 3 ? delivered : undefined;
  });
  t.is(copies, 3);
  t.is(sys.notificationLines().filter((l) => l.includes(purchaseId)).length, 1, 'still one notice');
});

test('a purchase of a product that ships nowhere is told too, without an address', async (t) => {
  const sku = await sys.createProduct({ name: 'Notice ticket', priceCents: 2500, currency: 'eur' });
  const bought = await sys.buy(sku, 'notice-ben');
  t.is(bought.status, 201, JSON.stringify(bought.body));
  await sys.pay(await sessionOf(sys.db, bought.body.purchaseId), 'succeeded');
  await sys.temporal.workflow.getHandle(purchaseWorkflowId(bought.body.purchaseId)).result();
  const { rows } = await sys.db.query('SELECT kind, message FROM notifications WHERE purchase_id = $1', [
    bought.body.purchaseId,
  ]);
  t.is(rows.length, 1);
  t.is(rows[0].kind, 'confirmed');
  t.regex(rows[0].message, /^Your purchase is confirmed: 1 × Notice ticket, €25\.00, paid on .+ UTC\. Your receipt: /);
  t.false(rows[0].message.includes('ships'));
  const got = await sys.purchase(bought.body.purchaseId);
  t.truthy(Date.parse(got.body.confirmedAt));
  t.false('shipping' in got.body, 'no address was collected');
});
