import test from 'ava';
import { selectedValues, selectorsOf } from '../helpers/promql';
import { asBuyer, startSystem } from '../helpers/system';
import { startWorkerProcess } from '../helpers/worker-process';
import { until } from '../helpers/poll';

// The checkout line as an operator sees it: the API's gauges of the line (its length, its wait, how
// late its oldest slot is, the shortest hold in it), and the sessions counted by the worker that
// opens them, with the time from the purchase placed, for buyers answered 202 from the line too.

/** The one value `expr` (a plain selector) selects in a scrape; undefined when none. */
function valueOf(scrape: string, expr: string): number | undefined {
  const values = selectedValues(scrape, selectorsOf(expr)[0]);
  return values.length === 1 ? values[0] : undefined;
}

test('buyers answered 202 from the checkout line are counted when their sessions open, and the line shows in the gauges', async (t) => {
  // A database of its own: the pace is one row, and this test puts it 10 s ahead (a line already long).
  const sys = await startSystem({ worker: false, ownDatabase: true, checkoutsPerSecond: 5 });
  let worker: Awaited<ReturnType<typeof startWorkerProcess>> | undefined;
  try {
    const sku = await sys.createProduct({ stock: 10, holdSeconds: 900 });
    const paceSetAt = Date.now();
    await sys.db.query(`UPDATE checkout_pace SET next_at = now() + interval '10 seconds' WHERE pace_id = 1`);
    /** The whole seconds left of the 10 by now, less one: the least a poll may be told to wait (a slow machine took the rest). */
    const leastWait = () => 10 - Math.ceil((Date.now() - paceSetAt) / 1000) - 1;
    const buyers = ['line-1', 'line-2', 'line-3', 'line-4'];
    const answers = await Promise.all(buyers.map((b) => sys.buy(sku, b)));
    const least = leastWait();
    t.true(least >= 1, `the buys took ${Date.now() - paceSetAt} ms: too slow to tell`);
    for (const a of answers) {
      t.is(a.status, 202, JSON.stringify(a.body));
      t.true(a.body.checkoutQueue.estimatedWaitSeconds > 1, JSON.stringify(a.body));
      // Its session cannot open before its slot, 10 s or more away: asked to read it again then, not sooner.
      t.true(a.body.checkoutQueue.nextPollSeconds >= least, JSON.stringify(a.body));
      t.is(a.headers.get('retry-after'), String(a.body.checkoutQueue.nextPollSeconds));
    }
    const read = await sys.api(
      'GET',
      `/v1/purchases/${answers[0].body.purchaseId}`,
      undefined,
      await asBuyer('line-1'),
    );
    t.is(read.headers.get('retry-after'), String(read.body.checkoutQueue.nextPollSeconds));
    t.true(read.body.checkoutQueue.nextPollSeconds >= leastWait(), JSON.stringify(read.body));
    const apiScrape = async () => (await sys.api('GET', '/metrics')).body as string;

    const waiting = await apiScrape();
    t.is(valueOf(waiting, 'flashsale_checkout_line_waiting'), 4);
    t.true(valueOf(waiting, 'flashsale_checkout_line_seconds')! > 0, 'the last slot is still ahead');
    t.is(valueOf(waiting, 'flashsale_checkout_line_shortest_hold_seconds'), 900);

    // No worker yet: the slots come and pass, the purchases stay in the line, their wait shows.
    const { rows } = await sys.db.query<{ first: Date }>(
      `SELECT min(checkout_at) AS first FROM purchases WHERE sku = $1`,
      [sku],
    );
    await until(
      'the first slot 2 s past',
      async () => {
        const { rows: now } = await sys.db.query<{ past: boolean }>(
          `SELECT now() > $1::timestamptz + interval '2 seconds' AS past`,
          [rows[0].first],
        );
        return now[0].past || undefined;
      },
      60_000,
      200,
    );
    const late = await apiScrape();
    t.true(valueOf(late, 'flashsale_checkout_line_oldest_slot_seconds')! >= 2, late);
    t.is(valueOf(late, 'flashsale_checkout_line_waiting'), 4);

    worker = await startWorkerProcess(sys);
    const w = worker;
    const workerScrape = await until(
      'the four sessions counted by the worker',
      async () => {
        const text = await (await fetch(`${w.url}/metrics`)).text();
        return valueOf(text, 'flashsale_sessions_opened_total') === 4 ? text : undefined;
      },
      60_000,
      200,
    );
    t.is(
      valueOf(workerScrape, 'flashsale_stripe_requests_total{endpoint="checkout.sessions.create",outcome="ok"}'),
      4,
      'as many sessions counted as the worker created',
    );
    t.is(valueOf(workerScrape, 'flashsale_purchase_checkout_seconds_count'), 4);
    // Each waited its turn in the line (10 s and more) before its session opened.
    t.is(valueOf(workerScrape, 'flashsale_purchase_checkout_seconds_bucket{le="6.4"}'), 0);
    t.true(valueOf(workerScrape, 'flashsale_purchase_checkout_seconds_sum')! >= 4 * 10, workerScrape);

    const drained = await until('the line empty', async () => {
      const text = await apiScrape();
      return valueOf(text, 'flashsale_checkout_line_waiting') === 0 ? text : undefined;
    });
    t.is(valueOf(drained, 'flashsale_checkout_line_shortest_hold_seconds'), 0);
    t.is(valueOf(drained, 'flashsale_checkout_line_oldest_slot_seconds'), 0);
  } finally {
    if (worker) {
      const exited = new Promise((r) => worker!.child.once('exit', r));
      worker.child.kill('SIGTERM');
      await exited;
    }
    await sys.close();
  }
});
