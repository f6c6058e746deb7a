import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import test from 'ava';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import {
  buyerAuth,
  call,
  DEV_ADMIN_TOKEN,
  EMULATOR_KEY,
  freePorts,
  launch,
  makeDataDir,
  startEnv,
  stopAll,
  until,
  type Launched,
} from './launch';
import { runOpsCli } from '../helpers/attention';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';

/** WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: new events (a signal) came in as the task completed the run. */
const UNHANDLED_COMMAND: temporal.api.enums.v1.WorkflowTaskFailedCause = 1;

/** Long enough to outlast the stop; short enough that it lapses soon after the restart. */
const SHORT_HOLD_SECONDS = 25;

interface Opened {
  purchaseId: string;
  status: string;
  checkoutUrl: string;
  holdExpiresAt: string;
}

// Postgres, Temporal and the payments emulator all keep their state in the data folder, so a saga
// that waits for its payment across a restart meets the same session afterwards: it can be paid,
// cancelled (the session is expired) or lapse (the workflow expires the session itself).
/**
 * The suite's workflow bundle (npm test builds one): a restart is about what survives it, not about
 * bundling, which the first run's test (start.test.ts) proves; each launch would otherwise run
 * webpack for seconds of CPU.
 */
const SUITE_BUNDLE = process.env.WORKFLOW_BUNDLE_PATH ? { WORKFLOW_BUNDLE_PATH: process.env.WORKFLOW_BUNDLE_PATH } : {};

test('sagas waiting for payment across a restart of npm start are paid, cancelled or lapse as before', async (t) => {
  const dataDir = makeDataDir('flash-sale-restart-');
  // A teardown runs even when an assertion in `finally` has failed the test.
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const ports = await freePorts();
  // No drain period for load balancers: nothing stands in front of this API.
  const env = startEnv(dataDir, ports, { SHUTDOWN_GRACE_MS: '0', ...SUITE_BUNDLE });
  const api = `http://127.0.0.1:${ports.api}`;
  const emulator = `http://127.0.0.1:${ports.emulator}`;
  const admin = { authorization: `Bearer ${DEV_ADMIN_TOKEN}` };
  let service: Launched | undefined = launch(env);
  try {
    await service.ready();
    for (const [sku, holdSeconds] of [
      ['restart-long', 600],
      ['restart-short', SHORT_HOLD_SECONDS],
    ] as const) {
      const product = { sku, holdSeconds, name: 'Runner', priceCents: 12900, currency: 'eur', stock: 5 };
      t.is((await call('POST', `${api}/v1/products`, product, admin)).status, 201);
    }
    const buyers = new Map<string, { authorization: string }>();
    const buy = async (sku: string, buyerId: string): Promise<Opened> => {
      const auth = await buyerAuth(env, buyerId);
      const res = await call(
        'POST',
        `${api}/v1/purchases`,
        { sku },
        { 'idempotency-key': `restart-${buyerId}`, ...auth },
      );
      t.is(res.status, 201, JSON.stringify(res.body));
      const opened = res.body as Opened;
      buyers.set(opened.purchaseId, auth);
      t.is(opened.status, 'awaiting_payment');
      t.true(opened.checkoutUrl.startsWith(`${emulator}/checkout/cs_`), opened.checkoutUrl);
      return opened;
    };
    const paid = await buy('restart-long', 'payer');
    const cancelled = await buy('restart-long', 'quitter');
    const lapsing = await buy('restart-short', 'dawdler');
    const sessionOf = (p: Opened) => sessionIdOfCheckoutUrl(p.checkoutUrl);

    let since = Date.now();
    await stopAll(t, service, ports);
    service = undefined;
    t.log(`stopped in ${(Date.now() - since) / 1000}s`);
    t.true(fs.existsSync(path.join(dataDir, 'stripe-emulator.json')), 'the emulator wrote its state file');
    t.false(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'Postgres shut down cleanly');
    // The short hold is still running: its lapse is handled by the restarted stack, not the first one.
    t.true(Date.now() < Date.parse(lapsing.holdExpiresAt), 'the stop took longer than the short hold');

    since = Date.now();
    service = launch(env);
    await service.ready();
    t.log(`ready again in ${(Date.now() - since) / 1000}s`);
    // (The short hold may lapse any moment now, so only the long ones are read here.)
    for (const p of [paid, cancelled]) {
      const { body } = await call('GET', `${api}/v1/purchases/${p.purchaseId}`, undefined, buyers.get(p.purchaseId));
      t.like(body, { status: 'awaiting_payment', checkoutUrl: p.checkoutUrl }, 'the record survived the restart');
    }

    const pay = await call('POST', `${emulator}/_emulator/sessions/${sessionOf(paid)}/pay`, { outcome: 'succeeded' });
    t.is(pay.status, 200, JSON.stringify(pay.body));
    const cancel = await call(
      'POST',
      `${api}/v1/purchases/${cancelled.purchaseId}/cancel`,
      undefined,
      buyers.get(cancelled.purchaseId),
    );
    t.is(cancel.status, 200, JSON.stringify(cancel.body));

    const settled = async (p: Opened, status: string): Promise<void> => {
      const ms = Math.max(0, Date.parse(p.holdExpiresAt) - Date.now()) + 30_000;
      const seen = await until(`${p.purchaseId} to be ${status}`, ms, async () => {
        const { body } = await call('GET', `${api}/v1/purchases/${p.purchaseId}`, undefined, buyers.get(p.purchaseId));
        return (body as { status: string }).status === status ? body : undefined;
      }).catch(
        async () =>
          (await call('GET', `${api}/v1/purchases/${p.purchaseId}`, undefined, buyers.get(p.purchaseId)))
            .body as unknown,
      );
      t.like(seen, { status }, `${p.purchaseId}: ${JSON.stringify(seen)}`);
    };
    await settled(paid, 'confirmed');
    await settled(cancelled, 'expired');
    await settled(lapsing, 'expired');

    // The emulator remembers the sessions opened before the restart, and says how each ended.
    const session = async (p: Opened) =>
      (
        await call('GET', `${emulator}/v1/checkout/sessions/${sessionOf(p)}`, undefined, {
          authorization: `Bearer ${EMULATOR_KEY}`,
        })
      ).body as unknown;
    t.like(await session(paid), { status: 'complete', payment_status: 'paid' });
    t.like(await session(cancelled), { status: 'expired' });
    t.like(await session(lapsing), { status: 'expired' });
    t.like((await call('GET', `${api}/v1/products/restart-long`)).body, { sold: 1, held: 0, available: 4 });
    t.like((await call('GET', `${api}/v1/products/restart-short`)).body, { sold: 0, held: 0, available: 5 });

    // Every saga completed with that outcome, and none met a failed activity or workflow task on the
    // way. Not a failure: a workflow task the server refused as unhandled (a webhook's signal landed
    // as the run was completing): the saga then read that signal, as the stragglers' rule wants.
    const connection = await Connection.connect({ address: `127.0.0.1:${ports.temporal}` });
    try {
      const client = new Client({ connection });
      for (const [p, status] of [
        [paid, 'confirmed'],
        [cancelled, 'expired'],
        [lapsing, 'expired'],
      ] as const) {
        const handle = client.workflow.getHandle(`purchase-${p.purchaseId}`);
        t.like(await handle.result(), { status });
        t.is((await handle.describe()).status.name, 'COMPLETED');
        const failures = ((await handle.fetchHistory()).events ?? []).filter(
          (e) =>
            e.activityTaskFailedEventAttributes ||
            e.activityTaskTimedOutEventAttributes ||
            (e.workflowTaskFailedEventAttributes && e.workflowTaskFailedEventAttributes.cause !== UNHANDLED_COMMAND),
        );
        t.deepEqual(failures, [], `purchase-${p.purchaseId} history`);
      }
    } finally {
      await connection.close();
    }
  } finally {
    if (service) await stopAll(t, service, ports);
  }
});

// The CLIs are run with the DATABASE_URL that npm start printed: it must still hold after a restart,
// and when the port it used is taken meanwhile, the new one is printed, saying so.
test('npm start keeps its Postgres port across restarts, and says so when that port was taken', async (t) => {
  const dataDir = makeDataDir('flash-sale-pgport-');
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const ports = await freePorts();
  const env = startEnv(dataDir, ports, { SHUTDOWN_GRACE_MS: '0', ...SUITE_BUNDLE });
  const printedUrl = (s: Launched): string => /Postgres +(postgres:\/\/\S+)/.exec(s.output())![1];

  let service: Launched | undefined = launch(env);
  try {
    await service.ready();
    const url = printedUrl(service);
    const port = service.postgresPort()!;
    await stopAll(t, service, ports);

    service = launch(env);
    await service.ready();
    t.is(service.postgresPort(), port, 'the same port as the first start');
    const cli = await runOpsCli('reconcile', [], { DATABASE_URL: url });
    t.is(cli.code, 0, `the first start's DATABASE_URL reaches the restarted Postgres: ${cli.stderr}`);
    await stopAll(t, service, ports);

    // Someone else holds the port now: Postgres starts on another and the launcher says so.
    // It hangs up on whoever connects (the launcher probes the port), so it can close at the end.
    const squatter = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve, reject) => {
      squatter.once('error', reject);
      squatter.listen(port, '127.0.0.1', resolve);
    });
    t.teardown(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
    service = launch(env);
    await service.ready();
    const moved = service.postgresPort()!;
    t.not(moved, port);
    t.regex(
      service.output(),
      new RegExp(`port ${port}, where Postgres was last time, is taken: it is on ${moved} now`),
    );
  } finally {
    if (service) await stopAll(t, service, ports);
  }
});
