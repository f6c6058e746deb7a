import test from 'ava';

import { pay, sessionParams, startHarness, waitFor } from './harness';

test('the hosted page shows the item, the amount, the expiry and the Pay and Decline buttons', async (t) => {
  const { stripe } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  const res = await fetch(session.url as string);
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
  const html = await res.text();
  t.true(html.includes('Limited sneaker'));
  t.true(html.includes('$30.00'));
  t.true(html.includes('id="expires"'));
  t.true(html.includes('data-status="open"'));
  t.true(html.includes(`action="/checkout/${session.id}/pay"`));
  t.true(html.includes('name="outcome" value="succeeded"'));
  t.true(html.includes('name="outcome" value="declined"'));
  t.true(html.includes('href="http://shop.test/purchases/p_1/cancelled"'));
});

test('the Pay form completes the session and redirects to the success_url', async (t) => {
  const { stripe, emulator, receiver } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  const res = await fetch(`${emulator.url}/checkout/${session.id}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'outcome=succeeded',
    redirect: 'manual',
  });
  t.is(res.status, 303);
  t.is(res.headers.get('location'), `http://shop.test/purchases/p_1/done?session_id=${session.id}`);

  const after = await stripe.checkout.sessions.retrieve(session.id);
  t.is(after.status, 'complete');
  t.is(after.payment_status, 'paid');
  await waitFor('the completed event', () => receiver.accepted('checkout.session.completed').length === 1);

  const page = await (await fetch(`${emulator.url}/checkout/${session.id}`)).text();
  t.true(page.includes('data-status="paid"'));
});

test('the Decline form keeps the buyer on the page with the decline shown', async (t) => {
  const { stripe, emulator, receiver } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(sessionParams());
  const res = await fetch(`${emulator.url}/checkout/${session.id}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'outcome=declined',
    redirect: 'manual',
  });
  t.is(res.status, 303);
  const location = res.headers.get('location') as string;
  t.is(location, `/checkout/${session.id}?declined=1`);

  const page = await (await fetch(`${emulator.url}${location}`)).text();
  t.true(page.includes('Your card was declined.'));
  t.true(page.includes('data-status="open"'));
  await waitFor('the payment_failed event', () => receiver.accepted('payment_intent.payment_failed').length === 1);
});

test('an expired session shows that it expired and cannot be paid from the page', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await harness.stripe.checkout.sessions.expire(session.id);
  const page = await (await fetch(`${harness.emulator.url}/checkout/${session.id}`)).text();
  t.true(page.includes('data-status="expired"'));
  t.false(page.includes('value="succeeded"'));

  const res = await fetch(`${harness.emulator.url}/checkout/${session.id}/pay`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'outcome=succeeded',
    redirect: 'manual',
  });
  t.is(res.status, 400);
  t.true((await res.text()).includes('can no longer be paid'));
});

test('a delayed payment shows as processing on the page until it settles', async (t) => {
  const harness = await startHarness(t);
  const session = await harness.stripe.checkout.sessions.create(sessionParams());
  await pay(harness, session.id, 'async_pending');
  const page = await (await fetch(`${harness.emulator.url}/checkout/${session.id}`)).text();
  t.true(page.includes('data-status="processing"'));
});

test('an unknown session renders a not-found page', async (t) => {
  const { emulator } = await startHarness(t);
  const res = await fetch(`${emulator.url}/checkout/cs_test_missing`);
  t.is(res.status, 404);
  t.true((await res.text()).includes('Checkout not found'));
});

test('text from the merchant is escaped on the page', async (t) => {
  const { stripe } = await startHarness(t);
  const session = await stripe.checkout.sessions.create(
    sessionParams({
      line_items: [
        {
          quantity: 1,
          price_data: { currency: 'usd', unit_amount: 500, product_data: { name: '<script>x</script>' } },
        },
      ],
    }),
  );
  const html = await (await fetch(session.url as string)).text();
  t.false(html.includes('<script>x</script>'));
  t.true(html.includes('&lt;script&gt;x&lt;/script&gt;'));
});
