import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { notificationMetrics } from '../../worker/notification-metrics';
import { dispatchNotification } from '../../activities/notifications';
import { dispatchOwed } from '../../worker/notifier';
import { testTelemetry } from '../helpers/fixtures';
import { runOpsCli } from '../helpers/attention';
import { delivery, notification, notificationSent, ownDb, sender } from '../helpers/notifications';
import { until } from '../helpers/poll';

// Notifications that cannot be delivered, through their Temporal workflows: the merchant's webhook
// (a local HTTP server) refuses one for good (dead after one attempt) or keeps failing (dead at
// NOTIFY_MAX_ATTEMPTS); support lists and requeues the dead ones with the CLI and the worker's
// hand-over delivers them; the worker's /metrics counts them per channel; and a notification's
// channels (webhook and log) succeed and fail apart. Each test has a database and a task queue of its
// own (test/helpers/notifications.ts): a worker's hand-over takes every owed row of its database.

const SECRET = 'whsec_' + Buffer.from('outbox-dead-letter-secret-0123456789').toString('base64');

/** A merchant webhook answering `status(id, nth delivery of that id)`. */
async function receiver(
  t: ExecutionContext,
  status: (id: string, nth: number) => number,
): Promise<{ url: string; deliveries: { id: string; status: number }[] }> {
  const deliveries: { id: string; status: number }[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const s = status(id, deliveries.filter((d) => d.id === id).length + 1);
      deliveries.push({ id, status: s });
      res.writeHead(s).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries };
}

const webhook = (url: string) => ({ NOTIFY_WEBHOOK_URL: url, NOTIFY_WEBHOOK_SECRET: SECRET });

test('a 4xx from the merchant (not 408 or 429) is dead after one attempt, and the CLI lists and requeues it to be delivered', async (t) => {
  const { db, url } = await ownDb(t);
  let fixed = false;
  const hook = await receiver(t, () => (fixed ? 200 : 410));
  const { outcomes, notifier } = await sender(t, db, webhook(hook.url));
  const id = await notification(db, { notifier });

  const dead = await until('dead', async () => ((await delivery(db, id))?.dead_at ? delivery(db, id) : undefined));
  t.is(dead.attempts, 1);
  t.is(dead.last_error, 'the webhook answered 410');
  await new Promise((r) => setTimeout(r, 400)); // several retry intervals: a dead delivery is not tried again
  t.is(hook.deliveries.length, 1);
  t.deepEqual(outcomes, ['webhook:dead']);

  const env = { DATABASE_URL: url };
  // Each pair of CLI runs reads the same state: they run side by side.
  const [list, listed] = await Promise.all([
    runOpsCli('support', ['notifications', 'list'], env),
    runOpsCli('support', ['notifications', 'list', '--json'], env),
  ]);
  t.is(list.code, 0, list.stderr);
  t.regex(
    list.stdout,
    new RegExp(`ntf_${id}  webhook  purchase pur_\\w+  buyer buyer-1  refunded_by_support  1 attempt`),
  );
  t.regex(list.stdout, /the webhook answered 410/);
  const json = JSON.parse(listed.stdout);
  t.like(json.data[0], { id, channel: 'webhook', attempts: 1, lastError: 'the webhook answered 410' });

  fixed = true;
  const retry = await runOpsCli('support', ['notifications', 'retry', `ntf_${id}`], env);
  t.is(retry.code, 0, retry.stderr);
  t.regex(retry.stdout, new RegExp(`ntf_${id}  webhook  requeued`));
  const sent = await until('sent', async () => ((await delivery(db, id))?.sent_at ? delivery(db, id) : undefined));
  t.is(sent.attempts, 1, 'a fresh count after the requeue');
  t.is(sent.dead_at, null);
  await notificationSent(db, id);
  t.deepEqual(
    hook.deliveries.map((d) => d.status),
    [410, 200],
  );

  // Nothing dead any more: a retry of one by id says so with exit 1 (bad input is a usage error of the parser,
  // exit 2 before the database is opened: test/fast/ops/support-args.test.ts).
  // With --all, nothing dead is nothing to do (a scheduled job's empty run): exit 0.
  const [again, listedAgain, all] = await Promise.all([
    runOpsCli('support', ['notifications', 'retry', `ntf_${id}`], env),
    runOpsCli('support', ['notifications', 'list'], env),
    runOpsCli('support', ['notifications', 'retry', '--all'], env),
  ]);
  t.is(again.code, 1);
  t.regex(again.stderr, new RegExp(`ntf_${id}: no dead delivery`));
  t.regex(listedAgain.stdout, /no dead notifications/);
  t.is(all.code, 0, all.stderr);
  t.regex(all.stdout, /no dead notifications to requeue/);
});

test('a 500 is retried until NOTIFY_MAX_ATTEMPTS, then dead; 408 and 429 are retried too', async (t) => {
  const { db } = await ownDb(t);
  const hook = await receiver(t, (_id, nth) => [408, 429][nth - 1] ?? 500);
  const { outcomes, notifier } = await sender(t, db, { ...webhook(hook.url), NOTIFY_MAX_ATTEMPTS: '4' });
  const id = await notification(db, { notifier });
  const dead = await until('dead', async () => ((await delivery(db, id))?.dead_at ? delivery(db, id) : undefined));
  t.is(dead.attempts, 4);
  t.is(dead.last_error, 'the webhook answered 500');
  await new Promise((r) => setTimeout(r, 400));
  t.deepEqual(
    hook.deliveries.map((d) => d.status),
    [408, 429, 500, 500],
  );
  t.deepEqual(outcomes, ['webhook:failed', 'webhook:failed', 'webhook:failed', 'webhook:dead']);
});

test("a notification's channels are delivered apart: the log's success does not count the failing webhook sent, and the webhook's retries do not print it again", async (t) => {
  const { db } = await ownDb(t);
  // One notification the webhook refuses twice then takes, one it refuses for good.
  let refused = '';
  const hook = await receiver(t, (id, nth) => (id === refused ? 400 : nth <= 2 ? 503 : 200));
  const { lines, notifier } = await sender(t, db, { ...webhook(hook.url), NOTIFY_LOG: '1' });
  const retried = await notification(db, { notifier, buyer: 'buyer-retried' });
  const refusedId = await notification(db, { notifier, buyer: 'buyer-refused' });
  refused = `ntf_${refusedId}`;

  await until('the retried one is sent', async () =>
    (await db.query('SELECT sent_at FROM notifications WHERE id = $1', [retried])).rows[0].sent_at ? true : undefined,
  );
  await until(
    'the refused one is dead on the webhook',
    async () => (await delivery(db, refusedId))?.dead_at ?? undefined,
  );
  await new Promise((r) => setTimeout(r, 300));
  const printed = (buyer: string) => lines.filter((l) => l.startsWith(`notification for buyer ${buyer} `)).length;
  t.is(printed('buyer-retried'), 1, 'printed once, though the webhook took three attempts');
  t.is((await delivery(db, retried, 'log')).attempts, 1);
  t.is((await delivery(db, retried, 'webhook')).attempts, 3);

  t.is(printed('buyer-refused'), 1);
  t.truthy((await delivery(db, refusedId, 'log')).sent_at, 'the log delivered it');
  const hookRow = await delivery(db, refusedId, 'webhook');
  t.is(hookRow.sent_at, null);
  t.is(hookRow.attempts, 1);
  const { rows } = await db.query('SELECT sent_at FROM notifications WHERE id = $1', [refusedId]);
  t.is(rows[0].sent_at, null, 'not sent while one channel is dead');
});

test("the worker's /metrics counts pending and dead deliveries per channel, and attempts by outcome", async (t) => {
  const { db } = await ownDb(t);
  const hook = await receiver(t, (_id, nth) => (nth === 1 ? 500 : 422));
  const telemetry = await testTelemetry(t);
  const countOutcome = notificationMetrics(telemetry.registry, db, ['webhook']);
  const scrape = async () => (await fetch(`${telemetry.url}/metrics`)).text();
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };

  // Before any worker delivers: two notifications wait, not yet fanned out, pending on the webhook
  // (as an earlier version's outbox leaves them at an upgrade: the worker hands them over at start).
  const ids = [await notification(db), await notification(db)];
  let text = await scrape();
  t.is(value(text, 'flashsale_notifications{channel="webhook",state="pending"}'), 2);
  t.is(value(text, 'flashsale_notifications{channel="webhook",state="dead"}'), 0);
  t.is(value(text, 'flashsale_notification_deliveries_total{channel="webhook",outcome="dead"}'), 0);

  await sender(t, db, webhook(hook.url), countOutcome);
  for (const id of ids) await until('dead', async () => (await delivery(db, id))?.dead_at ?? undefined);
  text = await scrape();
  t.is(value(text, 'flashsale_notifications{channel="webhook",state="pending"}'), 0);
  t.is(value(text, 'flashsale_notifications{channel="webhook",state="dead"}'), 2);
  t.is(value(text, 'flashsale_notification_deliveries_total{channel="webhook",outcome="failed"}'), 2);
  t.is(value(text, 'flashsale_notification_deliveries_total{channel="webhook",outcome="dead"}'), 2);
  t.is(value(text, 'flashsale_notification_deliveries_total{channel="webhook",outcome="delivered"}'), 0);
});

test('handed over twice at once (an activity retried, two workers starting up), a notification is delivered once', async (t) => {
  const { db } = await ownDb(t);
  const hook = await receiver(t, () => 200);
  const { notifier } = await sender(t, db, webhook(hook.url));
  const id = await notification(db);
  await Promise.all([
    dispatchNotification(db, notifier, id),
    dispatchNotification(db, notifier, id),
    dispatchOwed(db, notifier),
  ]);
  await notificationSent(db, id);
  await new Promise((r) => setTimeout(r, 400));
  t.is(hook.deliveries.length, 1);
  t.is((await delivery(db, id)).attempts, 1);
});

test('a worker from before 1.3, still running in a rolling upgrade, finds no delivery due: only the workflows send', async (t) => {
  const { db } = await ownDb(t);
  const id = await notification(db);
  // A delivery as the workflows' side writes it (the column's default), then the 1.2 sender's claim
  // (store/outbox.ts of 1.2): due when next_attempt_at has come.
  await db.query("INSERT INTO notification_deliveries (notification_id, channel) VALUES ($1, 'webhook')", [id]);
  const { rows } = await db.query(
    'SELECT notification_id FROM notification_deliveries WHERE sent_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()',
  );
  t.deepEqual(rows, []);
});
