import test from 'ava';
import { takeHold } from '../../store/holds';
import { assertInvariants } from '../helpers/db';
import { ADMIN_TOKEN, sessionOf, startSystem, type System } from '../helpers/system';

// A payment made in the last seconds of a hold can be reported after the lapse: Stripe's webhook is
// late and the saga that would have closed the session is behind. Within the product's
// `holdGraceSeconds` the unit is out of every other buyer's reach, so that payment sells the hold
// itself; past it (here a grace of 0) the next buyer's take reclaims the unit and the payment can
// only re-take one or be refunded.

let sys: System;
test.before(async () => {
  sys = await startSystem();
});
test.after.always(async () => {
  await sys?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Long enough to pay and stop the worker before the lapse on a loaded machine: both must be done
 * before the hold ends (the payment a second before, see `payInTimeReportLate`).
 */
const HOLD_SECONDS = 10;

/**
 * Buys the only unit, then pays for it in time with the webhook held, and stops the saga before its
 * hold lapses. In time as the saga counts it: Stripe's event times are whole seconds and the saga
 * takes a payment to be made at the end of its event's second (`paidBy` in vocabulary), so the
 * second the payment was made in must end before the hold does.
 */
async function payInTimeReportLate(sku: string, buyer: string) {
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buy: ${res.status} ${JSON.stringify(res.body)}`);
  const { purchaseId, holdExpiresAt } = res.body;
  const holdEnd = Date.parse(holdExpiresAt);
  const sessionId = await sessionOf(sys.db, purchaseId);
  await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: true });
  await sys.pay(sessionId, 'succeeded');
  const paidBy = Math.floor(Date.now() / 1000) * 1000 + 999;
  // The saga must not act on the lapse: its worker stops before the hold's timer fires.
  await sys.stopWorker();
  const stoppedAt = Date.now();
  if (paidBy >= holdEnd || stoppedAt >= holdEnd) {
    throw new Error(
      `the machine is too slow for a ${HOLD_SECONDS} s hold: paid by ${new Date(paidBy).toISOString()}, ` +
        `worker stopped at ${new Date(stoppedAt).toISOString()}, hold ended at ${holdExpiresAt}`,
    );
  }
  // Past the lapse, as Postgres's clock has it.
  await sleep(holdEnd - Date.now() + 1500);
  return purchaseId as string;
}

/** Another buyer's hold step, as the saga's first activity takes it. */
function nextBuyerTakes(sku: string, buyer: string) {
  return takeHold(sys.db, { purchaseId: `pur_next_${sku}`, sku, buyerId: buyer, quantity: 1 });
}

async function reportAndResume(purchaseId: string) {
  await sys.emulatorCall('POST', '/_emulator/webhooks', { pause: false });
  await sys.startWorker();
  return sys.waitForPurchase(purchaseId, (r) => !['holding', 'awaiting_payment'].includes(r.status), 20_000);
}

test.serial(
  'a payment made in time and reported after the lapse is the sale: within the grace no one else gets the unit',
  async (t) => {
    const sku = await sys.createProduct({ holdSeconds: HOLD_SECONDS, holdGraceSeconds: 60, stock: 1 });
    t.is((await sys.stock(sku)).holdGraceSeconds, 60);
    let purchaseId = '';
    try {
      purchaseId = await payInTimeReportLate(sku, 'grace-gil');
      // Lapsed but within its grace: it counts as held, the sweeper's reclaim and another take find nothing.
      t.like(await sys.stock(sku), { available: 0, held: 1, soldOut: true });
      t.is((await sys.db.query('SELECT reclaim_expired($1) AS n', [sku])).rows[0].n, 0);
      t.like(await nextBuyerTakes(sku, 'grace-next'), { outcome: 'sold_out' });
      // The gate says so too: not final, since the unit may still come back.
      const refused = await sys.buy(sku, 'grace-third');
      t.is(refused.status, 409);
      t.like(refused.body, { type: 'sold-out', final: false });
    } finally {
      if (!purchaseId) await sys.startWorker();
    }
    const p = await reportAndResume(purchaseId);
    t.is(p.status, 'confirmed', p.reason);
    t.like(await sys.stock(sku), { sold: 1, held: 0, available: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test.serial(
  'with no grace the next buyer takes the lapsed unit, and the late-reported payment is refunded',
  async (t) => {
    const sku = await sys.createProduct({ holdSeconds: HOLD_SECONDS, holdGraceSeconds: 0, stock: 1 });
    let purchaseId = '';
    try {
      purchaseId = await payInTimeReportLate(sku, 'nograce-gil');
      t.like(await sys.stock(sku), { available: 1, held: 0 });
      t.like(await nextBuyerTakes(sku, 'nograce-next'), { outcome: 'held' });
    } finally {
      if (!purchaseId) await sys.startWorker();
    }
    const p = await reportAndResume(purchaseId);
    t.is(p.status, 'refunded', p.reason);
    t.regex(p.reason, /sold out/);
    t.like(await sys.stock(sku), { held: 1, sold: 0 });
    await assertInvariants(t, sys.db, sku);
  },
);

test('holdGraceSeconds out of 0–3600 is a 400 naming it, and nothing is created', async (t) => {
  for (const [i, holdGraceSeconds] of [-1, 3601, 1.5, 'soon'].entries()) {
    const sku = `grace-bad-${i}-${Date.now()}`;
    const res = await sys.api(
      'POST',
      '/v1/products',
      { sku, name: 'x', priceCents: 100, currency: 'usd', stock: 1, holdGraceSeconds },
      { authorization: `Bearer ${ADMIN_TOKEN}` },
    );
    t.is(res.status, 400, JSON.stringify(holdGraceSeconds));
    t.is(res.body.type, 'invalid-request');
    t.true(
      res.body.errors.some((e: { field: string }) => e.field === 'holdGraceSeconds'),
      JSON.stringify(res.body),
    );
    t.is((await sys.api('GET', `/v1/products/${sku}`)).status, 404);
  }
});
