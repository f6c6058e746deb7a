import test from 'ava';
import type pg from 'pg';
import { Admissions } from '../../store/admission';
import { DbClock } from '../../store/clock';
import { Gate } from '../../store/gate';
import { takeHold } from '../../store/holds';
import { createProduct } from '../../store/products';
import { testDb, uniqueSku } from '../helpers/db';

// Two API processes admit one key at once: B looks the key up before A records its purchase, and
// B's gate reads the stock after A's saga took the last unit. B must answer A's purchase, not
// `sold_out` (test/saga/same-key.test.ts covers one process, over HTTP).

const db = testDb(8);
test.after.always(() => db.end());

/** `db`, whose first admission lookup answers only once `release` is called (its snapshot is taken at once). */
function lookupHeldBack(pool: pg.Pool): { db: pg.Pool; looked: Promise<void>; release: () => void } {
  let release!: () => void;
  let looked!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const lookedUp = new Promise<void>((r) => (looked = r));
  let first = true;
  const held = new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') {
        return async (...args: unknown[]) => {
          const answer = await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (first && String(args[0]).includes('held_by_now')) {
            first = false;
            looked();
            await released;
          }
          return answer;
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { db: held, looked: lookedUp, release };
}

test('a key admitted by another process meanwhile is answered from its purchase, not sold out', async (t) => {
  const clock = new DbClock(db);
  await clock.start();
  const gates = [
    new Gate(db, process.env.DATABASE_URL!, { clock }),
    new Gate(db, process.env.DATABASE_URL!, { clock }),
  ];
  await Promise.all(gates.map((g) => g.start()));
  t.teardown(() => Promise.all(gates.map((g) => g.close())));
  const sku = uniqueSku('two-procs');
  await createProduct(db, { sku, name: 'Last one', priceCents: 1000, currency: 'usd', stock: 1 });
  const req = { sku, buyerId: `${sku}-buyer`, quantity: 1 };

  const b = lookupHeldBack(db);
  const inB = new Admissions(b.db, gates[1], clock).admit('one-key', req);
  await b.looked;
  // Meanwhile process A records the purchase and its saga takes the last unit.
  const inA = await new Admissions(db, gates[0], clock).admit('one-key', req);
  if (inA.outcome !== 'new') return t.fail(`A: ${inA.outcome}`);
  t.like(await takeHold(db, { purchaseId: inA.record.purchaseId, ...req }), { outcome: 'held' });
  b.release();
  t.like(await inB, { outcome: 'known', record: { purchaseId: inA.record.purchaseId } });
});
