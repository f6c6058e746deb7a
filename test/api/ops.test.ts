import test from 'ava';
import { dashboardPanels, selectedValues, selectorsOf } from '../helpers/promql';
import { startSystem, type System } from '../helpers/system';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

let sys: System;
test.before(async () => {
  sys = await startSystem({ worker: true });
});
test.after.always(async () => {
  await sys?.close();
});

test.serial(
  'metrics show the funnel: gate answers, sagas, payments, the gate view and the checkout line (sessions: the worker counts them)',
  async (t) => {
    const sku = await sys.createProduct({ stock: 1 });
    const res = await sys.buy(sku, 'metrics-buyer');
    t.is(res.status, 201);
    await sys.pay(sessionIdOfCheckoutUrl(res.body.checkoutUrl), 'succeeded');
    await sys.waitForPurchase(res.body.purchaseId, (r) => r.status === 'confirmed');
    const metrics = await sys.api('GET', '/metrics');
    t.is(metrics.status, 200);
    t.regex(metrics.headers.get('content-type') ?? '', /^text\/plain/);
    const text = metrics.body as string;
    t.regex(text, /flashsale_gate_answers_total\{outcome="permit"\} 1/);
    t.regex(text, /flashsale_sagas_started_total 1/);
    t.regex(text, new RegExp(`flashsale_gate_remaining_units\\{sku="${sku}"\\} 0`));
    t.regex(text, /flashsale_payment_events_total\{type="checkout.session.completed"\} 1/);
    t.regex(text, /^flashsale_checkout_line_waiting \d+$/m);
    t.regex(text, /^flashsale_checkout_line_seconds [\d.]+$/m);
    t.regex(text, /flashsale_webhook_events_total\{result="delivered"\} [1-9]/);
    t.regex(text, /flashsale_purchases\{status="confirmed"\} [1-9]/);
    // Statuses nobody is in read 0 (the dashboard's "Needs attention" shows 0, not No data).
    for (const status of ['needs_attention', 'late_confirmed'])
      t.regex(text, new RegExp(`flashsale_purchases\\{status="${status}"\\} \\d+`));
    t.regex(text, /^flashsale_payments_received_total 1$/m);
    // The dashboard's "Paid /s" reads this payment: every series its query selects is in the scrape, counted.
    const paid = dashboardPanels().find((p) => p.title === 'Paid /s')!;
    for (const selector of paid.exprs.flatMap(selectorsOf)) {
      t.deepEqual(selectedValues(text, selector), [1], `"Paid /s" selects ${JSON.stringify(selector)}`);
    }
  },
);

test.serial('readyz says ready with Postgres and Temporal up, and 503 while draining', async (t) => {
  t.is((await sys.api('GET', '/healthz')).status, 200);
  const ready = await sys.api('GET', '/readyz');
  t.is(ready.status, 200);
  t.deepEqual(ready.body.checks, { postgres: 'ok', temporal: 'ok' });
  sys.lifecycle.draining = true;
  try {
    const draining = await sys.api('GET', '/readyz');
    t.is(draining.status, 503);
    t.is(draining.body.status, 'draining');
  } finally {
    sys.lifecycle.draining = false;
  }
});
