import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { sessionIdOfCheckoutUrl } from '@flash-sale/stripe-emulator';
import { isFinal } from '../../vocabulary';
import type { System } from './system-options';

/** The Checkout Session id of a purchase. */
export async function sessionOf(db: pg.Pool, purchaseId: string): Promise<string> {
  const { rows } = await db.query('SELECT checkout_session_id FROM purchases WHERE purchase_id = $1', [purchaseId]);
  return rows[0].checkout_session_id;
}

/**
 * The buyers of a crowd who got a unit, with their purchase and Checkout Session. Each is answered 201
 * with its checkout URL or, on a loaded machine, 202: the contract's answer for a hold whose session is
 * not open within the wait. A 202 is followed until its session opens, so every winner has one.
 */
export async function winnersOf(
  sys: System,
  answers: { status: number; body: any }[],
): Promise<{ purchaseId: string; sessionId: string }[]> {
  const won = answers.filter((a) => a.status === 201 || a.status === 202);
  return Promise.all(
    won.map(async ({ status, body }) => {
      if (status === 201) return { purchaseId: body.purchaseId, sessionId: sessionIdOfCheckoutUrl(body.checkoutUrl) };
      if (!body.holdExpiresAt) throw new Error(`a 202 without a hold: ${JSON.stringify(body)}`);
      const p = await sys.waitForPurchase(body.purchaseId, (r) => r.checkout_session_id !== null || isFinal(r.status));
      if (p.checkout_session_id === null) throw new Error(`a 202 that ended without a session: ${JSON.stringify(p)}`);
      return { purchaseId: body.purchaseId, sessionId: p.checkout_session_id };
    }),
  );
}

/**
 * Sells a unit of `sku` to `buyer`: buys it and pays for it. The payment is forced: a short hold may
 * lapse before the payment lands on a loaded machine (its session expired by the saga), and the late
 * payment then re-takes the unit, `late_confirmed` instead of `confirmed`; sold either way, which is
 * what a test that needs the unit gone asks for. Returns the purchase once it is sold.
 */
export async function sellTo(sys: System, sku: string, buyer: string): Promise<{ purchaseId: string; status: string }> {
  let res = await sys.buy(sku, buyer);
  // A unit whose hold just lapsed may read as held in the API's view of the stock a moment longer
  // (409 sold-out, final: false, with retryAt): the buyer tries again when told, as a buyer would.
  for (let tries = 1; res.status === 409 && res.body.final === false && tries < 20; tries++) {
    const wait = Date.parse(String(res.body.retryAt)) - Date.now();
    await delay(Math.min(1000, Math.max(100, Number.isFinite(wait) ? wait : 0)));
    res = await sys.buy(sku, buyer);
  }
  if (res.status !== 201) throw new Error(`buying: ${res.status} ${JSON.stringify(res.body)}`);
  const purchaseId = res.body.purchaseId as string;
  const paid = await sys.pay(await sessionOf(sys.db, purchaseId), 'succeeded', { force: true });
  if (paid.status !== 200) throw new Error(`paying: ${paid.status} ${JSON.stringify(paid.body)}`);
  const sold = await sys.waitForPurchase(purchaseId, (r) => ['confirmed', 'late_confirmed'].includes(r.status));
  return { purchaseId, status: sold.status };
}
