import test from 'ava';
import { productPage, type ProductModel } from '../../../web/catalogue';
import { html } from '../../../web/html';
import { formatMoney, formatWait } from '../../../web/money';
import { purchasePage, type PurchaseModel } from '../../../web/purchase';
import { queuePage, type TicketModel } from '../../../web/queue';

// The rendering layer alone (web/): what each page says for each state it can be given, the
// waiting room's states included (test/e2e/room-pages.test.ts drives them against the real room).

const product: ProductModel = {
  sku: 'runner-42',
  name: 'Runner <42>',
  priceCents: 12_900,
  currency: 'eur',
  available: 3,
  held: 0,
  soldOut: false,
  maxPerBuyer: 2,
  hasRoom: false,
};
const alice = { buyer: 'alice' };
const now = new Date('2026-12-01T12:00:00Z');

test('html escapes every value and keeps its own markup', (t) => {
  const name = `<script>alert("x")</script>&'`;
  t.is(
    html`<p title="${name}">${name}${html`<b>ok</b>`}${[1, html`<i>2</i>`]}${null}${undefined}${false}</p>`.text,
    '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;<b>ok</b>1<i>2</i></p>',
  );
});

test('money and waits read as a buyer reads them', (t) => {
  t.is(formatMoney(12_900, 'usd'), '$129.00');
  t.is(formatMoney(500, 'jpy'), '¥500');
  t.is(formatWait(42), '42 s');
  t.is(formatWait(75), '1 min 15 s');
  t.is(formatWait(7300), '2 h 1 min');
});

test('a product with a waiting room offers Join the queue, not Buy', (t) => {
  const page = productPage({ ...product, hasRoom: true }, alice, 'key-1', now);
  t.regex(page, /<form method="post" action="\/p\/runner-42\/queue" id="offer" data-state="queue">/);
  t.regex(page, />\s*Join the queue\s*</);
  t.false(page.includes('id="buy"'));
});

test('before opensAt the product page of a room counts down, offers the pre-queue, and refreshes itself', (t) => {
  // opensAt comes only with a waiting room (the catalogue refuses it otherwise).
  const opensAt = '2026-12-01T12:02:05Z';
  const page = productPage({ ...product, hasRoom: true, opensAt }, alice, 'key-1', now);
  t.regex(page, /data-state="not_open"/);
  t.regex(page, /<time id="countdown" datetime="2026-12-01T12:02:05Z" data-deadline data-reload>in 2 min 5 s<\/time>/);
  t.regex(page, /\(12:02 UTC\)/, 'the clock time beside the count');
  t.regex(page, /data-state="prequeue"/, 'buyers join the pre-queue before the opening');
  t.false(page.includes('id="buy"'));
  t.regex(page, /<noscript><meta http-equiv="refresh" content="60" \/><\/noscript>/, 'reloads only without JavaScript');
  t.regex(page, /<script>/, 'the countdown ticks with JavaScript on');
  const after = productPage({ ...product, hasRoom: true, opensAt }, alice, 'key-1', new Date('2026-12-01T12:03:00Z'));
  t.regex(after, />\s*Join the queue\s*</, 'after the opening it is the queue');
  t.false(after.includes('http-equiv="refresh"'));
});

test('the Buy form carries the idempotency key and the per-buyer limit', (t) => {
  const page = productPage(product, alice, 'key-<1>', now);
  t.regex(page, /<input type="hidden" name="idempotencyKey" value="key-&lt;1&gt;"/);
  t.regex(page, /name="quantity"\s+type="number"[^>]*max="2"/);
  t.true(page.includes('<h1 id="name">Runner &lt;42&gt;</h1>'));
});

const ticket: TicketModel = {
  ticket: 'tkt_1',
  sku: 'runner-42',
  position: 120,
  state: 'waiting',
  estimatedWaitSeconds: 40,
};

test('the queue page: waiting shows the place and the wait and refreshes; admitted shows Buy with the admission token', (t) => {
  const waiting = queuePage(ticket, product, alice, 'key-1');
  t.regex(waiting, /data-state="waiting"/);
  t.regex(waiting, /<strong id="position">120<\/strong>/);
  t.regex(waiting, /<strong id="wait">40 s<\/strong>/);
  t.regex(waiting, /<noscript><meta http-equiv="refresh" content="10" \/><\/noscript>/);
  t.regex(waiting, /<main data-poll="\/v1\/queue\/tkt_1"/, 'with JavaScript it polls the ticket instead');
  t.false(waiting.includes('<form method="post" action="/p/'));

  const admitted = queuePage(
    {
      ...ticket,
      state: 'admitted',
      position: 0,
      admissionToken: 'adm.tok',
      admissionExpiresAt: '2026-12-01T12:10:00Z',
    },
    product,
    alice,
    'key-2',
  );
  t.regex(admitted, /data-state="admitted"/);
  t.regex(admitted, /action="\/p\/runner-42\/buy"/);
  t.regex(admitted, /<input type="hidden" name="admissionToken" value="adm.tok"/);
  t.regex(admitted, /<input type="hidden" name="idempotencyKey" value="key-2"/);
  t.false(admitted.includes('http-equiv="refresh"'), 'no refresh that could lose a half-filled form');
});

test('the queue page says so when the product sold out or the turn passed, and stops refreshing', (t) => {
  const soldOut = queuePage({ ...ticket, state: 'sold_out' }, product, alice, 'k');
  t.regex(soldOut, /<h1>Runner &lt;42&gt; is sold out<\/h1>/);
  t.false(soldOut.includes('http-equiv="refresh"'));
  const expired = queuePage({ ...ticket, state: 'expired' }, product, alice, 'k');
  t.regex(expired, /Your turn has passed/);
  t.false(expired.includes('Join the queue again'), 'joining again would only be the same ticket');
  t.false(expired.includes('href="/p/runner-42"'));
  for (const ended of [soldOut, expired]) {
    t.true(ended.includes('<a href="/" id="elsewhere">See what else is on sale</a>'), 'a way on, not a dead end');
  }
  const pre = queuePage({ ...ticket, state: 'prequeue', opensAt: '2026-12-01T13:00:00Z' }, product, alice, 'k');
  t.regex(pre, /drawn\s+at random at the opening/);
  t.regex(pre, /http-equiv="refresh"/);
});

test('the queue page of a spent turn links to its purchase instead of Buy, and says plainly the turn passed once it came to nothing', (t) => {
  const spent = { ...ticket, state: 'admitted' as const, position: 0, purchaseId: 'pur_<1>' };
  const underWay = queuePage({ ...spent, purchaseStatus: 'awaiting_payment' }, product, alice, 'k');
  t.regex(underWay, /data-state="bought"/);
  t.true(underWay.includes('<a id="purchase" href="/purchases/pur_%3C1%3E">'));
  t.false(underWay.includes('action="/p/runner-42/buy"'), 'no Buy form');
  t.false(underWay.includes('name="admissionToken"'));
  const unsold = queuePage({ ...spent, purchaseStatus: 'expired' }, product, alice, 'k');
  t.regex(unsold, /data-state="spent"/);
  t.regex(unsold, /<h1>Your turn has passed<\/h1>/);
  t.true(unsold.includes('<a id="purchase" href="/purchases/pur_%3C1%3E">'), 'still links the purchase');
  t.false(unsold.includes('Join the queue again'), 'no new place is offered');
  t.false(unsold.includes('href="/p/runner-42"'));
  t.false(unsold.includes('action="/p/runner-42/buy"'));
  t.true(unsold.includes('id="elsewhere"'), 'the rest of the sale');
});

const purchase: PurchaseModel = {
  purchaseId: 'pur_1',
  sku: 'runner-42',
  productName: 'Runner',
  quantity: 1,
  status: 'confirmed',
  holdExpiresAt: '2026-12-01T12:10:00Z',
  amountCents: 12_900,
  currency: 'eur',
};

test('the purchase page has words for every outcome, and refreshes only while news may come', (t) => {
  const cases: [Partial<PurchaseModel>, RegExp, boolean][] = [
    [{ status: 'holding' }, /being reserved/, true],
    [{ status: 'awaiting_payment', checkoutUrl: 'https://pay.example/cs_1' }, /Your item is reserved/, true],
    [{ status: 'confirmed' }, /Your purchase is confirmed/, false],
    [{ status: 'late_confirmed' }, /arrived after your reservation had ended[\s\S]*still there, so it is yours/, false],
    [{ status: 'expired', reason: 'the hold lapsed before payment' }, /expired before the payment arrived/, false],
    [{ status: 'expired', reason: 'cancelled by the buyer' }, /You cancelled this purchase/, false],
    [
      { status: 'expired', reason: 'cancelled by the buyer before the checkout opened' },
      /You cancelled this purchase/,
      false,
    ],
    [
      { status: 'payment_failed', reason: 'the delayed payment failed' },
      /The payment failed \(the delayed payment failed\)/,
      false,
    ],
    [
      { status: 'refunded', refund: { status: 'succeeded', reason: 'paid after the hold lapsed; nothing was left' } },
      /of €129\.00 for Runner was refunded in full[\s\S]*Why:\s+paid after the hold lapsed; nothing was left\./,
      false,
    ],
    [
      { status: 'failed', reason: 'cancelled by an operator' },
      /could not be completed \(cancelled by an operator\)/,
      false,
    ],
    [{ status: 'needs_attention' }, /support team has been told/, false],
  ];
  for (const [change, words, refreshes] of cases) {
    const page = purchasePage({ ...purchase, ...change }, alice, { left: false });
    t.regex(page, words, change.status);
    t.is(page.includes('http-equiv="refresh"'), refreshes, `${change.status} refreshes: ${refreshes}`);
    t.true(page.includes(`data-status="${change.status}"`));
  }
  t.notRegex(purchasePage(purchase, alice, { left: false }), /after your reservation had ended/);
  const left = purchasePage({ ...purchase, status: 'awaiting_payment' }, alice, { left: true });
  t.regex(left, /You left the checkout without paying/);
  const refunding = purchasePage({ ...purchase, refund: { status: 'pending', reason: 'damaged box' } }, alice, {
    left: false,
  });
  t.regex(
    refunding,
    /A refund of €129\.00 is on its way\. The money reaches your account within 5 to 10 working days\./,
  );
  t.regex(refunding, /Why: damaged box\./);
});
