import test from 'ava';
import pg from 'pg';
import { takeHoldsBatch } from '../../store/hold-desk';
import type { HoldResult } from '../../store/hold-types';
import { sweepExpired, takeHold } from '../../store/holds';
import { createProduct } from '../../store/products';
import { assertInvariants, uniqueSku } from '../helpers/db';
import { until } from '../helpers/poll';
import { createOwnDatabase } from '../helpers/own-database';

// A take that meets a lapsed hold while another transaction is returning it waits for that one,
// and takes the unit: it is not told sold out. The window is made wide on purpose: a trigger of
// this database's own sleeps as each lapsed hold is marked expired, inside the reclaimer's
// statement, after it locked the hold and before it gave the units back. The take is started
// while the reclaimer sleeps there. (Before migration 035 the take skipped the locked hold, read
// the bucket rows first and answered sold_out, every time.) The tests run one at a time: each
// finds the reclaimer it started by its sleep.

let db: pg.Pool;
test.before(async () => {
  db = new pg.Pool({ connectionString: await createOwnDatabase(), max: 10 });
  await db.query(`
    CREATE FUNCTION test_slow_expiry() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
    CREATE TRIGGER test_slow_expiry BEFORE UPDATE OF status ON holds FOR EACH ROW
      WHEN (OLD.status = 'active' AND NEW.status = 'expired') EXECUTE FUNCTION test_slow_expiry()`);
});
test.after.always(() => db?.end());

/** A product whose one hold of `quantity` units (all of its stock) lapsed past its grace. */
async function lapsedProduct(quantity: number): Promise<string> {
  const sku = uniqueSku();
  await createProduct(db, {
    sku,
    name: 'Last pair',
    priceCents: 9_000,
    currency: 'eur',
    stock: quantity,
    maxPerBuyer: quantity,
  });
  const first = await takeHold(db, { purchaseId: `${sku}-gone`, sku, buyerId: 'gone', quantity });
  if (first.outcome !== 'held') throw new Error(`the first hold was ${first.outcome}`);
  await db.query(
    `UPDATE holds h SET expires_at = now() - interval '1 second' - make_interval(secs => p.hold_grace_seconds)
       FROM products p WHERE p.sku = h.sku AND h.purchase_id = $1`,
    [`${sku}-gone`],
  );
  return sku;
}

/** Resolves once some session of this database sleeps in the trigger: a reclaimer holds the lapsed hold. */
const reclaimerInTheWindow = () =>
  until(
    'a reclaimer asleep between the hold it locked and the stock it gives back',
    async () =>
      (await db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`))
        .rowCount! > 0 || undefined,
    10_000,
    10,
  );

const single = (sku: string, buyer: string) =>
  takeHold(db, { purchaseId: `${sku}-${buyer}`, sku, buyerId: buyer, quantity: 1 });
const batched = async (sku: string, buyer: string) =>
  (await takeHoldsBatch(db, sku, [{ purchaseId: `${sku}-${buyer}`, sku, buyerId: buyer, quantity: 1 }]))[0];

for (const [name, take] of [
  ['a take', single],
  ['a hold desk batch', batched],
] as const) {
  test.serial(`${name} racing the sweeper over the last lapsed unit waits for it and holds the unit`, async (t) => {
    const sku = await lapsedProduct(1);
    const sweep = sweepExpired(db);
    await reclaimerInTheWindow();
    const taken: HoldResult = await take(sku, 'next');
    t.is(taken.outcome, 'held');
    t.true((await sweep) >= 1, 'the sweeper returned the lapsed hold');
    await assertInvariants(t, db, sku);
  });

  test.serial(
    `${name} racing another take that is reclaiming the same lapsed hold gets the unit left over`,
    async (t) => {
      const sku = await lapsedProduct(2);
      const first = single(sku, 'first');
      await reclaimerInTheWindow();
      const second = await take(sku, 'second');
      t.is(second.outcome, 'held');
      t.is((await first).outcome, 'held');
      const { rows } = await db.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM holds WHERE sku = $1 GROUP BY status ORDER BY status',
        [sku],
      );
      t.deepEqual(rows, [
        { status: 'active', n: 2 },
        { status: 'expired', n: 1 },
      ]);
      await assertInvariants(t, db, sku);
    },
  );
}
