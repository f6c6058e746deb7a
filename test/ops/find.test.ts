import test from 'ava';
import { runOpsCli } from '../helpers/attention';
import { AS_SUPPORT, asBuyer, sessionOf, startSystem, type System } from '../helpers/system';

// Support looks purchases up by what a buyer writes in with: their account, the Checkout Session,
// or the PaymentIntent on their statement. The CLI and the API route answer the same lookup.

let sys: System;
let paid: { purchaseId: string; sessionId: string; paymentIntentId: string };
let open: { purchaseId: string; sessionId: string };
const buyer = `find-${Date.now()}`;

test.before(async () => {
  sys = await startSystem();
  const sku = await sys.createProduct();
  const first = await sys.buy(sku, buyer);
  if (first.status !== 201) throw new Error(`buying: ${first.status} ${JSON.stringify(first.body)}`);
  const sessionId = await sessionOf(sys.db, first.body.purchaseId);
  await sys.pay(sessionId, 'succeeded');
  const record = await sys.waitForPurchase(first.body.purchaseId, (p) => p.status === 'confirmed');
  paid = { purchaseId: first.body.purchaseId, sessionId, paymentIntentId: record.payment_intent_id };
  const sku2 = await sys.createProduct();
  const second = await sys.buy(sku2, buyer);
  if (second.status !== 201) throw new Error(`buying: ${second.status} ${JSON.stringify(second.body)}`);
  open = { purchaseId: second.body.purchaseId, sessionId: await sessionOf(sys.db, second.body.purchaseId) };
});
test.after.always(() => sys?.close());

const supportCli = (args: string[]) => runOpsCli('support', args, { TEMPORAL_UI_URL: 'http://ui.test' });
const lookup = (query: string, headers: Record<string, string> = AS_SUPPORT) =>
  sys.api('GET', `/v1/support/purchases?${query}`, undefined, headers);

test('support find by buyer lists every purchase of the buyer, newest first, with ids and UI links', async (t) => {
  const out = await supportCli(['find', '--buyer', buyer]);
  t.is(out.code, 0, out.stderr);
  t.true(out.stdout.startsWith(`2 purchase(s) of buyer ${buyer}:`), out.stdout);
  t.true(out.stdout.indexOf(open.purchaseId) < out.stdout.indexOf(paid.purchaseId), 'newest first');
  t.regex(out.stdout, new RegExp(`${paid.purchaseId}  confirmed  `));
  t.true(out.stdout.includes(`session ${paid.sessionId}  payment ${paid.paymentIntentId}`));
  t.true(out.stdout.includes(`http://ui.test/namespaces/default/workflows/purchase-${paid.purchaseId}`));
});

test('support find by Checkout Session and by PaymentIntent finds the one purchase they paid', async (t) => {
  for (const args of [
    ['--session', paid.sessionId],
    ['--payment-intent', paid.paymentIntentId],
  ]) {
    const out = await supportCli(['find', ...args, '--json']);
    t.is(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout);
    t.is(report.purchases.length, 1, args.join(' '));
    t.like(report.purchases[0], { purchaseId: paid.purchaseId, status: 'confirmed', buyerId: buyer });
    t.is(report.purchases[0].url, `http://ui.test/namespaces/default/workflows/purchase-${paid.purchaseId}`);
  }
});

// Its bad command lines are UsageErrors of the parser (test/fast/ops/support-args.test.ts; exit 2
// with the usage: test/ops/support.test.ts).
test('support find exits 1 when nothing matches', async (t) => {
  const none = await supportCli(['find', '--payment-intent', 'pi_nobody']);
  t.is(none.code, 1);
  t.regex(none.stderr, /no purchase of PaymentIntent pi_nobody/);
});

test('GET /v1/support/purchases finds by buyerId, sessionId and paymentIntentId with the support token', async (t) => {
  const byBuyer = await lookup(`buyerId=${encodeURIComponent(buyer)}`);
  t.is(byBuyer.status, 200, JSON.stringify(byBuyer.body));
  t.deepEqual(
    byBuyer.body.data.map((p: { purchaseId: string }) => p.purchaseId),
    [open.purchaseId, paid.purchaseId],
  );
  t.like(byBuyer.body.data[0], { status: 'awaiting_payment', buyerId: buyer });
  t.truthy(byBuyer.body.data[0].checkoutUrl);
  for (const query of [`sessionId=${paid.sessionId}`, `paymentIntentId=${paid.paymentIntentId}`]) {
    const res = await lookup(query);
    t.is(res.status, 200, query);
    t.is(res.body.data.length, 1, query);
    t.like(res.body.data[0], { purchaseId: paid.purchaseId, status: 'confirmed' });
  }
  t.deepEqual((await lookup('sessionId=cs_nobody')).body, { data: [] });
});

test('GET /v1/support/purchases refuses a buyer token, and no key, two keys or another parameter with 400 naming it', async (t) => {
  const asBuyerToo = await lookup(`buyerId=${buyer}`, await asBuyer(buyer));
  t.is(asBuyerToo.status, 401);
  for (const [query, field] of [
    ['', 'query'],
    [`buyerId=${buyer}&sessionId=${open.sessionId}`, 'sessionId'],
    ['sku=x', 'sku'],
    ['buyerId=a&buyerId=b', 'buyerId'],
    ['buyerId=%01', 'buyerId'],
  ]) {
    const res = await lookup(query);
    t.is(res.status, 400, query);
    t.is(res.body.type, 'invalid-request', query);
    t.true(
      res.body.errors.some((e: { field: string }) => e.field === field),
      `${query}: ${JSON.stringify(res.body)}`,
    );
  }
});
