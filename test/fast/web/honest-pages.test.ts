import { runInNewContext } from 'node:vm';
import test from 'ava';
import { productPage, type ProductModel } from '../../../web/catalogue';
import { LIVE_SCRIPT } from '../../../web/live';
import { formatWait, fromNow } from '../../../web/money';
import { noticePage } from '../../../web/notice';
import { purchasePage, type PurchaseModel } from '../../../web/purchase';
import { queuePage, type TicketModel } from '../../../web/queue';
import { countdown, utcClock } from '../../../web/time';

// What the pages say about waits, deadlines and rules (issue 32): a full or paused room in words,
// deadlines as a count from now and a clock time, a settling bank debit with nothing to pay, the
// product's rules before the buyer pays, and the script's counting the same as the server's.

const now = new Date('2026-12-03T05:13:18Z');
const alice = { buyer: 'alice' };
const product: ProductModel = {
  sku: 'hoodie-ship',
  name: 'Hoodie',
  priceCents: 8900,
  currency: 'eur',
  available: 5,
  held: 0,
  soldOut: false,
  maxPerBuyer: 2,
  hasRoom: false,
};

test('a deadline reads as a count from now and a clock time; the day is named when it is not today', (t) => {
  t.is(fromNow(0), 'now');
  t.is(fromNow(545), 'in 9 min 5 s');
  t.is(fromNow(7 * 86_400), 'in 7 days');
  t.is(utcClock('2026-12-03T05:23:18Z', now), '05:23 UTC');
  t.is(utcClock('2026-12-10T05:23:18Z', now), 'Thu 10 Dec, 05:23 UTC');
  const html = countdown('2026-12-03T05:23:18Z', now).text;
  t.regex(html, /<time datetime="2026-12-03T05:23:18Z" data-deadline>in 10 min<\/time>/);
  t.regex(html, /<span data-clock="2026-12-03T05:23:18Z">\(05:23 UTC\)<\/span>/);
});

test("the page's script counts with the server's own functions", (t) => {
  const script = LIVE_SCRIPT.text;
  t.true(script.includes(formatWait.toString()));
  t.true(script.includes(fromNow.toString()));
  // The script's copy, run: the same words as the server's for any number of seconds.
  const body = script.slice(script.indexOf('const formatWait'), script.indexOf('const skew'));
  const clientFromNow = runInNewContext(`const __name = (f) => f; ${body}; fromNow`) as (s: number) => string;
  for (const s of [0, 1, 59, 60, 61, 3599, 3600, 7300, 172_800, 900_000]) t.is(clientFromNow(s), fromNow(s));
});

test('the product page lists its rules before the buyer pays, and caps the quantity by the smallest limit', (t) => {
  const rules = ['At most 1 per shipping address, counting earlier orders.', 'Ships only to France, Germany.'];
  const page = productPage({ ...product, rules, maxPerPurchase: 1 }, alice, 'k', now);
  t.regex(page, /<ul class="rules" id="rules"[^>]*>\s*<li>At most 2 per buyer\.<\/li>/);
  t.true(page.includes('<li>At most 1 per shipping address, counting earlier orders.</li>'));
  t.true(page.includes('<li>Ships only to France, Germany.</li>'));
  t.false(page.includes('name="quantity" type="number"'), 'one at most: no quantity to choose');
  t.regex(page, /<input type="hidden" name="quantity" value="1" \/>/);
  const two = productPage({ ...product, maxPerBuyer: 5, maxPerPurchase: 2 }, alice, 'k', now);
  t.regex(two, /Quantity \(at most 2\)[\s\S]*max="2"/);
});

const ticket: TicketModel = {
  ticket: 'tkt_1',
  sku: 'hoodie-ship',
  position: 1,
  state: 'waiting',
  estimatedWaitSeconds: 780,
  roomState: 'open',
};

test('the queue page says when the room is full or paused, when it was updated, and the title counts the line', (t) => {
  const full = queuePage({ ...ticket, roomFull: true }, product, alice, 'k', now);
  t.regex(full, /<strong id="full">The shop is full:<\/strong>/);
  t.regex(full, /it grows while nobody is let in/);
  t.regex(full, /<title>1 ahead · Queue · Hoodie<\/title>/);
  t.regex(full, /Updated <time datetime="2026-12-03T05:13:18.000Z" data-updated>05:13:18 UTC<\/time>/);
  t.regex(full, /need not keep this page open/);
  t.false(full.includes('Keep this page open'));
  const paused = queuePage({ ...ticket, roomState: 'paused' }, product, alice, 'k', now);
  t.regex(paused, /The shop has paused letting buyers in for now/);
  t.regex(paused, /no wait can be promised/);
  const plain = queuePage(ticket, product, alice, 'k', now);
  t.notRegex(plain, /id="full"|id="paused"/);
});

test('an admitted buyer reads how long the turn lasts as a count, and the title says it is their turn', (t) => {
  const admitted = queuePage(
    { ...ticket, state: 'admitted', position: 0, admissionToken: 'a', admissionExpiresAt: '2026-12-03T05:18:18Z' },
    { ...product, hasRoom: true },
    alice,
    'k',
    now,
  );
  t.regex(admitted, /<title>Your turn: buy Hoodie<\/title>/);
  t.regex(
    admitted,
    /Your turn ends\s*<time id="turn-ends" datetime="2026-12-03T05:18:18Z" data-deadline>in 5 min<\/time>/,
  );
  t.notRegex(admitted, /GMT/);
});

const awaiting: PurchaseModel = {
  purchaseId: 'pur_1',
  sku: 'hoodie-ship',
  productName: 'Hoodie',
  quantity: 1,
  status: 'awaiting_payment',
  holdExpiresAt: '2026-12-10T05:13:18Z',
  checkoutUrl: 'https://pay.example/cs_1',
  amountCents: 8900,
  currency: 'eur',
};

test('a settling bank debit is its own state: nothing to pay, and no reload but every few minutes', (t) => {
  const page = purchasePage({ ...awaiting, settlingSince: '2026-12-03T05:10:00Z' }, alice, { left: false, now });
  t.regex(page, /<h1>Your bank payment is being confirmed<\/h1>/);
  t.regex(page, /<title>Your bank payment is being confirmed<\/title>/);
  t.regex(page, /nothing more for you to do/);
  t.false(page.includes('id="pay"'), 'no pay link');
  t.regex(page, /<noscript><meta http-equiv="refresh" content="300" \/><\/noscript>/);
  t.regex(page, /data-poll-seconds="300"/);
});

test('confirming, declined and ready are three texts, and only the last two offer the checkout', (t) => {
  const confirming = purchasePage(awaiting, alice, { left: false, paid: true, now });
  t.regex(confirming, /<h1>Confirming your payment<\/h1>/);
  t.false(confirming.includes('id="pay"'), 'just back from paying: no invitation to pay again');
  // Come to by a link, not from paying: the way to pay, and a slow reload without JavaScript.
  const reserved = purchasePage(awaiting, alice, { left: false, now });
  t.regex(reserved, /<h1>Your item is reserved<\/h1>/);
  t.regex(reserved, /<a class="button" href="https:\/\/pay.example\/cs_1" id="pay">Go to the checkout<\/a>/);
  t.regex(reserved, /<noscript><meta http-equiv="refresh" content="30" \/><\/noscript>/);
  const declined = purchasePage(
    { ...awaiting, reason: 'the last payment attempt was declined; the buyer may try again' },
    alice,
    {
      left: true,
      now,
    },
  );
  t.regex(declined, /<h1>Your payment was declined: try again<\/h1>/);
  t.regex(declined, /<a class="button" href="https:\/\/pay.example\/cs_1" id="pay">Try again<\/a>/);
  const ready = purchasePage(awaiting, alice, { left: false, payNext: true, now });
  t.regex(ready, /<h1>Your checkout is ready<\/h1>/);
  t.regex(ready, /<main data-go="https:\/\/pay.example\/cs_1">/);
  t.regex(ready, /<noscript><meta http-equiv="refresh" content="1; url=https:\/\/pay.example\/cs_1" \/><\/noscript>/);
});

test('back from a payment that went through after a decline (the success return), the page is confirming, not declined', (t) => {
  const declined = { ...awaiting, reason: 'the last payment attempt was declined; the buyer may try again' };
  const back = purchasePage(declined, alice, { left: false, paid: true, now });
  t.regex(back, /<h1>Confirming your payment<\/h1>/);
  t.regex(back, /You have just paid: your payment is being\s+confirmed/);
  t.false(back.includes('id="pay"'), 'no invitation to pay again');
  t.regex(back, /<noscript><meta http-equiv="refresh" content="2" \/><\/noscript>/);
  // Not back from paying (a link, My purchases), the decline is the news: try again, reloading slowly.
  const visited = purchasePage(declined, alice, { left: false, now });
  t.regex(visited, /<h1>Your payment was declined: try again<\/h1>/);
  t.regex(visited, /<noscript><meta http-equiv="refresh" content="30" \/><\/noscript>/);
  // The cancel link wins over a crafted `paid`.
  t.regex(purchasePage(declined, alice, { left: true, paid: true, now }), /<h1>Your payment was declined: try again/);
});

test('a purchase that ended unsold offers Buy again while the product is on sale, and not otherwise', (t) => {
  const expired = { ...awaiting, status: 'expired' as const, reason: 'the hold lapsed before payment' };
  t.regex(
    purchasePage(expired, alice, { left: false, now, onSale: true }),
    /<a class="button" href="\/p\/hoodie-ship" id="buy-again">Buy again<\/a>/,
  );
  t.false(purchasePage(expired, alice, { left: false, now, onSale: false }).includes('buy-again'));
  t.false(
    purchasePage({ ...awaiting, status: 'confirmed' }, alice, { left: false, now, onSale: true }).includes('buy-again'),
  );
});

test('a buyer already in the line is offered their place, not a second Join', (t) => {
  const page = productPage({ ...product, hasRoom: true, inQueue: true }, alice, 'k', now);
  t.regex(page, /id="offer" data-state="in_queue"/);
  t.regex(page, />\s*See your place\s*</);
  t.false(page.includes('Join the queue'));
});

test("preparing the checkout counts the page's own look and the hop to Stripe in its estimate, and never backs off far", (t) => {
  const preparing = purchasePage(
    { ...awaiting, status: 'holding', checkoutUrl: undefined, checkoutQueue: { ahead: 3, estimatedWaitSeconds: 5 } },
    alice,
    { left: false, payNext: true, now },
  );
  t.regex(preparing, /3 buyers are ahead of you, about\s+8 s/);
  t.regex(preparing, /data-poll-max="4"/);
});

test('the order line breaks the amount down by unit, and the confirmed page says what was paid', (t) => {
  const two = purchasePage({ ...awaiting, status: 'confirmed', quantity: 2, amountCents: 17_800 }, alice, {
    left: false,
    now,
  });
  t.regex(two, /2 × <a href="\/p\/hoodie-ship">Hoodie<\/a>, at €89\.00 each: €178\.00\./);
  t.regex(two, /you paid €178\.00/);
  t.regex(two, /This page is\s+your receipt/);
});

test('the confirmed page is a receipt: when it was confirmed and where it ships, line by line, as text', (t) => {
  const receipt = purchasePage(
    {
      ...awaiting,
      status: 'confirmed',
      confirmedAt: '2026-12-01T17:40:05.000Z',
      shippingLines: ['Ann <b>Martin</b>', '12 Rue de la Paix', '75002 Paris', 'FR'],
    },
    alice,
    { left: false, now },
  );
  t.regex(receipt, /<time datetime="2026-12-01T17:40:05.000Z" id="confirmed-at">1 Dec 2026, 17:40 UTC<\/time>/);
  t.regex(
    receipt,
    /<address id="ships-to">Ann &lt;b&gt;Martin&lt;\/b&gt;<br \/>12 Rue de la Paix<br \/>75002 Paris<br \/>FR<\/address>/,
  );
  t.regex(receipt, /your order is sent to this address/);
  const noAddress = purchasePage({ ...awaiting, status: 'late_confirmed' }, alice, { left: false, now });
  t.notRegex(noAddress, /id="receipt"/);
  t.regex(noAddress, /nothing more for you to do/);
  const unpaid = purchasePage({ ...awaiting, confirmedAt: '2026-12-01T17:40:05.000Z' }, alice, { left: false, now });
  t.notRegex(unpaid, /id="next"/, 'no receipt before it is confirmed');
});

test('a line sold out for now says so, when a unit may come back, and whether it may reach this buyer', (t) => {
  const near = queuePage(
    {
      ...ticket,
      position: 0,
      soldOutForNow: { unitsMayComeBack: 1, nextMayComeBackAt: '2026-12-03T05:23:18Z', withinReach: true },
    },
    product,
    alice,
    'k',
    now,
  );
  t.regex(near, /<strong id="sold-out-for-now">Sold out for now:<\/strong>/);
  t.regex(near, /One may come back if their buyers do not pay, the first at the latest\s*<time[^>]*>in 10 min<\/time>/);
  t.regex(near, /near enough the front to get one/);
  t.regex(near, /&quot;soldOutForNow&quot;:\{&quot;unitsMayComeBack&quot;:1/, 'the script watches it');
  const far = queuePage(
    { ...ticket, position: 9, soldOutForNow: { unitsMayComeBack: 2, withinReach: false } },
    product,
    alice,
    'k',
    now,
  );
  t.regex(far, /2 may come back if their buyers do not pay\./);
  t.regex(far, /you are unlikely to/);
});

test('a refusal worth trying again later goes back to the product by itself when the wait is over', (t) => {
  const page = noticePage(
    {
      title: 'Sold out for now',
      message: 'Held by another buyer.',
      kind: 'sold-out',
      retryAfterSeconds: 51,
      thenGoTo: '/p/hoodie-ship',
    },
    alice,
    now,
  );
  t.regex(
    page,
    /<time datetime="2026-12-03T05:14:09.000Z" data-deadline data-reload="\/p\/hoodie-ship">in 51 s<\/time>/,
  );
  t.regex(page, /<noscript><meta http-equiv="refresh" content="51; url=\/p\/hoodie-ship" \/><\/noscript>/);
  t.regex(page, /<main>/, 'not at once with JavaScript: when the count comes');
  t.regex(page, /<strong id="buyer">alice<\/strong>/);
});
