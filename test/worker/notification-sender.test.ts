import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { signDelivery } from '../../worker/notification-channels';
import { FAST_RETRIES } from '../helpers/notifications';
import { AS_SUPPORT, sessionOf, startSystem, type System } from '../helpers/system';
import { until } from '../helpers/poll';

// Buyer notifications delivered for real: a support refund's saga writes a notification, its
// `notifyBuyer` activity hands it to its delivery workflow on the worker's notifications queue, the
// merchant's webhook (a local HTTP server) answers 500 first, then 200. It must be delivered exactly
// once successfully, signed, with the same id on the retry.

const SECRET = 'whsec_' + Buffer.from('outbox-test-secret-0123456789abcdef').toString('base64');

interface Delivery {
  headers: IncomingMessage['headers'];
  body: string;
  status: number;
}

/** A merchant webhook that answers 500 to the first delivery of each notification id, then 200. */
async function receiver(): Promise<{ url: string; deliveries: Delivery[]; close(): Promise<void> }> {
  const deliveries: Delivery[] = [];
  const seen = new Set<string>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const status = seen.has(id) ? 200 : 500;
      seen.add(id);
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/merchant/notifications`,
    deliveries,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** A paid purchase refunded by support: its saga writes the `refunded_by_support` notification. */
async function refundedPurchase(sys: System, buyer: string): Promise<string> {
  const sku = await sys.createProduct();
  const res = await sys.buy(sku, buyer);
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  const purchaseId = res.body.purchaseId as string;
  await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded');
  await sys.waitForPurchase(purchaseId, (p) => p.status === 'confirmed');
  const refund = await sys.api(
    'POST',
    `/v1/support/purchases/${purchaseId}/refund`,
    { reason: 'damaged box', restock: false },
    AS_SUPPORT,
  );
  if (refund.status !== 202) throw new Error(`refunding: ${refund.status} ${JSON.stringify(refund.body)}`);
  return purchaseId;
}

test.serial(
  "a support refund's notification reaches the merchant webhook once, signed, after a 500, with the same id on the retry",
  async (t) => {
    const hook = await receiver();
    const sys = await startSystem({
      notify: {
        ...FAST_RETRIES,
        NOTIFY_RETRY_BASE_MS: '300',
        NOTIFY_RETRY_MAX_MS: '300',
        NOTIFY_WEBHOOK_URL: hook.url,
        NOTIFY_WEBHOOK_SECRET: SECRET,
      },
    });
    t.teardown(async () => {
      await hook.close();
      await sys.close();
    });

    const buyer = `outbox-${Date.now()}`;
    const purchaseId = await refundedPurchase(sys, buyer);
    const row = await until('the notification is marked sent', async () => {
      const { rows } = await sys.db.query(
        "SELECT * FROM notifications WHERE purchase_id = $1 AND kind = 'refunded_by_support'",
        [purchaseId],
      );
      return rows[0]?.sent_at ? rows[0] : undefined;
    });
    t.is(row.kind, 'refunded_by_support');
    const { rows: deliveries } = await sys.db.query(
      'SELECT channel, attempts, last_error FROM notification_deliveries WHERE notification_id = $1',
      [row.id],
    );
    t.deepEqual(
      deliveries,
      [{ channel: 'webhook', attempts: 2, last_error: null }],
      'one failed attempt, one delivered',
    );

    // Long enough for a third delivery if anything were wrong (several backoffs).
    await new Promise((r) => setTimeout(r, 1500));
    // The purchase's confirmation notice went the same way before it (test/saga/confirmation-notice.test.ts).
    const mine = hook.deliveries.filter((d) => d.headers['webhook-id'] === `ntf_${row.id}`);
    t.deepEqual(
      mine.map((d) => d.status),
      [500, 200],
    );
    const id = `ntf_${row.id}`;
    for (const d of mine) {
      t.is(d.headers['webhook-id'], id);
      t.is(d.headers['idempotency-key'], id);
      t.is(d.headers['content-type'], 'application/json');
      const ts = Number(d.headers['webhook-timestamp']);
      t.true(Math.abs(ts - Date.now() / 1000) < 60);
      t.is(d.headers['webhook-signature'], signDelivery(SECRET, id, ts, d.body), 'signed with the secret');
      t.like(JSON.parse(d.body), {
        type: 'buyer.notification',
        id,
        purchaseId,
        buyerId: buyer,
        kind: 'refunded_by_support',
        message: 'Your order was refunded: damaged box',
      });
    }
    t.not(mine[0].headers['webhook-signature'], signDelivery('whsec_b3RoZXI=', id, 0, mine[0].body));
  },
);

test.serial('with NOTIFY_LOG=1 (npm start) each notification is printed to the log and counted sent', async (t) => {
  const sys = await startSystem({ notify: { ...FAST_RETRIES, NOTIFY_LOG: '1' } });
  t.teardown(() => sys.close());
  const buyer = `outbox-log-${Date.now()}`;
  const purchaseId = await refundedPurchase(sys, buyer);
  const line = await until('the log line', async () =>
    sys.notificationLines().find((l) => l.includes(`${purchaseId}, refunded_by_support`)),
  );
  t.is(
    line,
    `notification for buyer ${buyer} (purchase ${purchaseId}, refunded_by_support): Your order was refunded: damaged box`,
  );
  await until('sent', async () => {
    const { rows } = await sys.db.query(
      "SELECT sent_at FROM notifications WHERE purchase_id = $1 AND kind = 'refunded_by_support'",
      [purchaseId],
    );
    return rows[0]?.sent_at ?? undefined;
  });
});
